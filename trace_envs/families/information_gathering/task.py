"""Information gathering: ask the user for the key instead of guessing it, then answer from the record.

The user wants to know something about one of their records but does not say which one: the opening carries no key.
The agent must ask the user for the key (the scripted user gives it when asked for it under any common name: the
reservation id, booking reference, confirmation code), look the record up with it, and then tell the user the value
of `params.answer_field` (a field name or a dotted path such as `flights.0.flight_number`) in a sentence. Reading a
record the user did not name or writing anything zeroes the score. Bindings: `target`, `answer`.

Example episode (airline):

    user:  Hi! My user id is omar_davis_3817. I'd like to know the flight number of the first flight of one of my
           reservations.
    agent: I can help with that. Could you please tell me your reservation id?
    user:  My reservation id is QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)
    agent: The flight number of the first flight of reservation QZ7Y2K is HAT028.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallRef, Check, Communicated, Grounded, NoCall
from trace_envs.families.kit import GOODBYE, Kit
from trace_envs.families.task import Task, register_task
from trace_envs.language import hints
from trace_envs.runtime import Scenario
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.world import RecordEnv, ScenarioError, new_state


class GatheringParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer_field: str = Field(description="Record field the user wants to know (a dotted path).")
    label: str | None = Field(default=None, description="How the user names the key (e.g. 'reservation id').")
    aliases: list[str] = Field(default_factory=list, description="Other words for the key the user understands.")
    answer_label: str | None = Field(default=None, description="How the user names the field they ask about.")


class GatheringEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        params = spec.params
        kit = Kit(spec, rng)
        key, path = kit.key, str(params["answer_field"])
        label = str(params.get("label") or kit.key_label)
        asked_about = str(params.get("answer_label") or path_words(path))
        n = max(spec.knobs.entities, 1 + spec.knobs.distractors, 2)
        answers: list[Any] = []

        def answerable(record: dict[str, Any]) -> bool:
            found, value = get_path(record, path)
            return found and isinstance(value, (str, int, float)) and not isinstance(value, bool) and value not in answers

        records = []
        for _ in range(n):  # the answer must tell the target apart from the user's other records
            record = kit.source.draw(answerable)
            if record is None:
                raise ScenarioError(f"no real record has a distinct value at {path}")
            answers.append(get_path(record, path)[1])
            records.append(record)
        target, answer = records[0][key], answers[0]
        kit.facts[label] = target
        aliases = sorted({key, kit.key_label, *[str(a) for a in params.get("aliases", [])]} - {label})
        opening = f"{kit.greeting()} I'd like to know the {asked_about} of one of my {kit.noun}s."
        ask = f"I can help with that. Could you please tell me your {label}?"
        say = f"The {asked_about} of {kit.noun} {target} is {answer}. {GOODBYE}"
        other, other_answer = records[1][key], answers[1]
        say_other = f"The {asked_about} of {kit.noun} {other} is {other_answer}. {GOODBYE}"
        read, read_other = kit.read_call(target), kit.read_call(other)
        oracle = [ask, read, say]
        mutants = {
            "drop_required_call": [ask, say],
            "swap_calls": [read, ask, say],
            "wrong_argument": [ask, read_other, say_other],
            "forbidden_extra_call": [ask, read, read_other, say],
            "text_only": [say],
        }
        return Scenario(
            state=new_state({r[key]: r for r in records}),
            bindings={"target": target, "answer": answer, **kit.owner_binding},
            opening=opening,
            facts=kit.facts,
            aliases={label: aliases},
            requests=[UserRequest(kind="info", tool=kit.read, phrase=f"know the {asked_about} of my {kit.noun}")],
            oracle=oracle,
            mutants=mutants,
        )


class InformationGathering(Task):
    name = "information_gathering"
    summary = "Ask the user for the key (or take it from an earlier result) before a lookup; never guess it."
    roles = ("read", "key")
    params = GatheringParams
    env_class = GatheringEnv

    def hint(self, spec: Any) -> str:
        p = spec.params
        label = p.get("label") or hints.value_words(spec.roles["key"])
        return hints.join([hints.ask_for(label, spec.roles["read"]),
                           hints.answer(p.get("answer_label") or hints.path_words(p.get("answer_field")))])

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read = roles["key"], roles["read"]
        read_target = CallRef(tool=read, args={key: {"$var": "target"}})
        return Check(clauses=[
            Communicated(id="answered", weight=2, values=[{"$var": "answer"}], after=read_target,
                         description="after reading the record, tell the user the value they asked for"),
            Grounded(
                id="asked_for_key", weight=1, requires=["answered"], call=CallRef(tool=read), args=[key],
                description=f"every {key} looked up came from the user (asked for it), never a guess",
            ),
            NoCall(
                id="no_other_read", penalty=True, call=CallRef(tool=read, args={key: {"$not": {"$var": "target"}}}),
                description="do not look up records the user did not give (another customer's, a guessed id)",
            ),
            NoCall(id="no_write", penalty=True, call=CallRef(kind="write"), description="change nothing"),
        ])


register_task(InformationGathering())
