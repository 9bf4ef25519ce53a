"""Information gathering: ask the user for the key instead of guessing it, then answer from the record.

The user wants to know something about one of their records but does not say which one: the opening carries no key.
The agent must ask the user for the key (the scripted user knows it under `params.label`), look the record up with it,
and then tell the user the value of `params.answer_field` (a field name or a dotted path such as
`flights.0.flight_number`). Guessing an id, reading a record the user did not name, or writing anything is penalised.
Bindings: `target`, `answer`.

Example episode (airline):

    user:  Hi! I'd like to know the flight number of the first flight of one of my reservations.
    agent: I can help with that. Could you please tell me your reservation id?
    user:  My reservation id is QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)
    agent: The flight number of the first flight of reservation QZ7Y2K is HAT028.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, Grounded, NoCall
from trace_envs.families import labeling
from trace_envs.families.base import FREE_TEXT_ARGS, Family, Label, Proposal, ProposalContext
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario, UserRequest
from trace_envs.runtime.phrases import key_noun, path_words
from trace_envs.runtime.records import get_path, like_id, like_value, set_path
from trace_envs.runtime.world import RecordEnv, call, make_records, new_state
from trace_envs.trajectories.results import ResultIndex

# On hard scenarios the opening also names another of the user's records (one they are not asking about).
MENTION_OTHER = {"easy": False, "medium": False, "hard": True}
UNIQUE_TRIES = 20


class GatheringParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer_field: str = Field(description="Record field the user wants to know (a dotted path).")
    label: str | None = Field(default=None, description="How the user names the key (e.g. 'reservation id').")
    aliases: list[str] = Field(default_factory=list, description="Other words for the key the user understands.")
    answer_label: str | None = Field(default=None, description="How the user names the field they ask about.")


class GatheringEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params, knobs = spec.roles, spec.params, spec.knobs
        read, key = roles["read"], roles["key"]
        path = str(params["answer_field"])
        label = str(params.get("label") or key.replace("_", " "))
        asked_about = str(params.get("answer_label") or path_words(path))
        noun = key_noun(key)
        n = max(knobs.entities, 1 + knobs.distractors, 2)
        records = make_records(spec, read, key, n, rng)
        ids = list(records)
        target, others = ids[0], ids[1:]
        for rid in ids:
            if not get_path(records[rid], path)[0]:
                set_path(records[rid], path, like_id("AB1234", rng))
        answer = get_path(records[target], path)[1]
        for rid in others:  # the answer must tell the target apart: re-draw a distractor's value that equals it
            for _ in range(UNIQUE_TRIES):
                if get_path(records[rid], path)[1] != answer:
                    break
                set_path(records[rid], path, like_value(answer, rng))
        other = others[0]
        opening = f"Hi! I'd like to know the {asked_about} of one of my {noun}s."
        if MENTION_OTHER[knobs.difficulty]:
            opening += f" It is not {noun} {other}, that one is fine."
        aliases = sorted({key, key.replace("_", " "), *[str(a) for a in params.get("aliases", [])]} - {label})
        ask = f"I can help with that. Could you please tell me your {label}?"
        say_answer = f"The {asked_about} of {noun} {target} is {answer}. Have a nice day."
        say_other = f"The {asked_about} of {noun} {other} is {get_path(records[other], path)[1]}. Have a nice day."
        read_target, read_other = call(read, **{key: target}), call(read, **{key: other})
        oracle = [ask, read_target, say_answer]
        mutants = {
            "drop_required_call": [ask, say_answer],
            "swap_calls": [read_target, ask, say_answer],
            "wrong_argument": [ask, read_other, say_other],
            "forbidden_extra_call": [ask, read_target, read_other, say_answer],
            "text_only": [say_answer],
        }
        return Scenario(
            state=new_state(records),
            bindings={"target": target, "answer": answer},
            opening=opening,
            facts={label: target},
            aliases={label: aliases},
            requests=[UserRequest(kind="info", tool=read, target=target, phrase=f"tell me the {asked_about} of my {noun}")],
            oracle=oracle,
            mutants=mutants,
        )


class InformationGathering(Family):
    name = "information_gathering"
    summary = "Ask the user for the key (or take it from an earlier result) before a lookup; never guess it."
    roles = ("read", "key")
    params = GatheringParams
    env_class = GatheringEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read = roles["key"], roles["read"]
        read_target = CallRef(tool=read, args={key: {"$var": "target"}})
        return Check(clauses=[
            CallMade(id="read_target", weight=1, call=read_target),
            Grounded(
                id="asked_for_key", weight=2, requires=["read_target"], call=CallRef(tool=read), args=[key],
                description=f"ask the user for the {key} instead of guessing it",
            ),
            Communicated(id="answered", weight=1, requires=["read_target"], values=[{"$var": "answer"}],
                         after=read_target),
            NoCall(
                id="no_other_read", weight=1, requires=["read_target"],
                call=CallRef(tool=read, args={key: {"$not": {"$var": "target"}}}),
                description="do not look up records the user did not give (another customer's, a guessed id)",
            ),
            NoCall(id="no_write", weight=1, requires=["read_target"], call=CallRef(kind="write")),
        ])

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.exercised(view, check, args.get("tool"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, k = roles.get("read"), roles.get("key")
        return (_asked(r, k), {"tool": r}) if r and k else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for r in ctx.reads:
            rargs = [a for a in ctx.args(r) if a not in FREE_TEXT_ARGS]
            if not rargs:
                continue
            k = rargs[0]
            out.append(Proposal(
                name=f"ask_for_{k}_before_{r}",
                description=f"Ask the user for the {k} (or take it from an earlier result) before calling {r}; never "
                "guess it.",
                roles={"read": r, "key": k},
                label_check=_asked(r, k),
                label_args={"tool": r},
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex) -> tuple[dict[str, Any], str]:
        key = roles.get("key", "")
        fields = [p for p in index.enum_fields(roles.get("read", "")) if p != key]
        field = fields[0] if fields else "status"
        return {"answer_field": field, "label": key.replace("_", " ")}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles["read"]] if roles.get("read") else []


def _asked(read: str, key: str) -> Check:
    return Check(applies_if=[CallRef(tool=read)], clauses=[Grounded(id="asked_for_key", call=CallRef(tool=read), args=[key])])


register_family(InformationGathering())
