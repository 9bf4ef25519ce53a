"""Argument grounding: pass a write argument exactly as the lookup returned it, never an invented value.

The write takes an argument (role `arg`) whose correct value is only in the read result, at `params.source_field` (a
field of the record, possibly a dotted path such as `payment_history.0.payment_id`). The user gives only the record's
key; distractor records carry other values. Bindings: `target`, `grounded`.

Example episode (airline baggage update paid with the reservation's payment method):

    user:  Hi! I'd like to update the reservation baggages for reservation id QZ7Y2K. ... For the payment id, use the
           same one as on my reservation: I don't have it at hand.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "payment_history": [{"payment_id": "gift_card_1"}]}
    agent: update_reservation_baggages(reservation_id=QZ7Y2K, ..., payment_id=gift_card_1)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Grounded, NoCall
from trace_envs.families import labeling
from trace_envs.families.base import MAX_TOOL_ARGS, Family, Label, Proposal, ProposalContext
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario, UserRequest
from trace_envs.runtime.phrases import done_message, key_noun, request_phrase
from trace_envs.runtime.records import example_for, get_path, like_value, set_path
from trace_envs.runtime.world import RecordEnv, call, canonical_json, fill_arguments, make_records, new_state
from trace_envs.trajectories.results import ResultIndex


class GroundingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_field: str = Field(description="Field of the read result that holds the value of write argument `arg`.")


class GroundingEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params, knobs = spec.roles, spec.params, spec.knobs
        read, write, key, arg = roles["read"], roles["write"], roles["key"], roles["arg"]
        source = str(params["source_field"])
        schema = spec.tool(write).properties.get(arg, {})
        example = example_for(schema if isinstance(schema, dict) else {}, arg)
        records = make_records(spec, read, key, knobs.entities + knobs.distractors, rng)
        ids = list(records)
        target, others = ids[0], ids[1:]
        # Every record carries its own value at `source`: the real one when the record shape has it, else a fresh one
        # shaped like the argument's example; never two records with the same value.
        used: list[Any] = []
        for rid in ids:
            found, value = get_path(records[rid], source)
            if not found or not _scalar(value) or value in used:
                value = _fresh(example, used, rng)
                set_path(records[rid], source, value)
            used.append(value)
        grounded = get_path(records[target], source)[1]
        label = key.replace("_", " ")
        noun = key_noun(key)
        arg_label = arg.replace("_", " ")
        write_args = fill_arguments(spec.tool(write), {key: target, arg: grounded})
        extras = {k: v for k, v in write_args.items() if k not in (key, arg)}
        opening = f"Hi! I'd like to {request_phrase(write)} for {label} {target}."
        if extras:
            opening += " Use these details: " + canonical_json(extras) + "."
        opening += f" For the {arg_label}, use the same one as on my {noun}: I don't have it at hand."
        for _ in range(50):  # the value must come from the lookup, never from the user
            if str(grounded) not in opening.replace(str(target), ""):
                break
            grounded = _fresh(example, used, rng)
            used.append(grounded)
            set_path(records[target], source, grounded)
            write_args[arg] = grounded
        decoy = get_path(records[others[0]], source)[1] if others else _fresh(example, used, rng)
        wrong = dict(write_args, **{arg: decoy})
        read_target = call(read, **{key: target})
        done = done_message(write, target)
        oracle = [read_target, call(write, **write_args), done]
        mutants = {
            "drop_required_call": [call(write, **write_args), done],
            "swap_calls": [call(write, **write_args), read_target, done],
            "wrong_argument": [read_target, call(write, **wrong), done],
            "forbidden_extra_call": [read_target, call(write, **write_args), call(write, **wrong), done],
            "text_only": [done],
        }
        return Scenario(
            state=new_state(records),
            bindings={"target": target, "grounded": grounded},
            opening=opening,
            requests=[UserRequest.write(write, key, target)],
            oracle=oracle,
            mutants=mutants,
        )


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _fresh(example: Any, used: list[Any], rng) -> Any:
    """A value shaped like the argument's example that no record uses yet."""
    for _ in range(20):
        value = like_value(example, rng)
        if _scalar(value) and value not in used:
            return value
    n = len(used) + 1
    if isinstance(example, (int, float)) and not isinstance(example, bool):
        return max([v for v in used if _scalar(v) and not isinstance(v, str)] + [example]) + n
    return f"{example}_{n}"


class ArgumentGrounding(Family):
    name = "argument_grounding"
    summary = "Pass a write argument exactly as an earlier lookup returned it; never invent ids or values."
    roles = ("read", "write", "key", "arg")
    params = GroundingParams
    env_class = GroundingEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write, arg = roles["key"], roles["read"], roles["write"], roles["arg"]
        return Check(clauses=[
            CallMade(id="read_target", weight=1, call=CallRef(tool=read, args={key: {"$var": "target"}})),
            CallMade(
                id="grounded_write", weight=2, requires=["read_target"],
                call=CallRef(tool=write, args={key: {"$var": "target"}, arg: {"$var": "grounded"}}),
                description=f"pass {arg} exactly as the lookup returned it",
            ),
            Grounded(id="no_invented_values", weight=1, requires=["read_target"], call=CallRef(tool=write), args=[arg]),
            NoCall(
                id="no_wrong_value", weight=1, requires=["read_target"],
                call=CallRef(tool=write, args={arg: {"$not": {"$var": "grounded"}}}),
            ),
        ])

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.exercised(view, check, args.get("tool"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w, a = roles.get("write"), roles.get("arg")
        return (_grounded(w, a), {"tool": w}) if w and a else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for w in ctx.writes:
            key = ctx.roles_for(w).get("key")
            for a in ctx.args(w)[:MAX_TOOL_ARGS]:
                # The key itself comes from the user's request: that is information gathering, not grounding.
                if a == key or ctx.free_text(w, a):
                    continue
                out.append(Proposal(
                    name=f"ground_{a}_of_{w}",
                    description=f"Pass argument {a} of {w} exactly as an earlier lookup returned it or the user said "
                    "it; never invent ids or values.",
                    roles=ctx.roles_for(w, arg=a),
                    label_check=_grounded(w, a),
                    label_args={"tool": w},
                ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex) -> tuple[dict[str, Any], str]:
        read = roles.get("read", "")
        sources = index.arg_sources.get((read, roles.get("write", ""), roles.get("arg", "")), Counter())
        source = sources.most_common(1)[0][0] if sources else roles.get("arg", "value")
        return {"source_field": source}, f" The value comes from {source} in the {read} result."


def _grounded(write: str, arg: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[Grounded(id="grounded", call=CallRef(tool=write), args=[arg])])


register_family(ArgumentGrounding())
