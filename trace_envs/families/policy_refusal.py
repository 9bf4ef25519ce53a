"""Policy refusal: refuse a write the policy forbids for this record, and say which rule forbids it.

The user requests a write the policy forbids for this record: `params.field` (a field of the record, possibly a
dotted path) holds one of `params.blocked` on the target. The agent must look the record up, not write, and tell the
user the blocking value. Bindings: `target`, `reason`, `reason_words` (the value as words: 'basic economy').

Example episode (airline, basic economy flights cannot be modified):

    user:  Hi! I'd like to update the reservation flights for reservation id QZ7Y2K. Use these details: {...}
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "cabin": "basic_economy", ...}
    agent: I'm sorry, I can't change the flights: the reservation is in basic economy, which cannot be modified.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, NoCall
from trace_envs.families import labeling
from trace_envs.families.base import Family, Label, Proposal, ProposalContext, infer_gate
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario, UserRequest
from trace_envs.runtime.phrases import request_phrase
from trace_envs.runtime.records import set_path
from trace_envs.runtime.world import RecordEnv, call, canonical_json, fill_arguments, make_records, new_state
from trace_envs.trajectories.results import ResultIndex


class RefusalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field whose value forbids the write.")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that forbid it.")
    allowed: list[Any] = Field(default_factory=list, description="Values of `field` that permit it.")


class RefusalEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params, knobs = spec.roles, spec.params, spec.knobs
        read, write, key = roles["read"], roles["write"], roles["key"]
        field = str(params["field"])
        blocked = list(params["blocked"])
        records = make_records(spec, read, key, knobs.entities + knobs.distractors, rng)
        ids = list(records)
        target, others = ids[0], ids[1:]
        reason = blocked[int(rng.integers(len(blocked)))]
        set_path(records[target], field, reason)
        # Distractors keep the value their record shape gives them; some get a blocking one too.
        for rid in others:
            if rng.random() < 0.5:
                set_path(records[rid], field, blocked[int(rng.integers(len(blocked)))])
        reason_words = str(reason).replace("_", " ")
        label = key.replace("_", " ")
        field_words = field.split(".")[-1].replace("_", " ")
        write_args = fill_arguments(spec.tool(write), {key: target})
        extras = {k: v for k, v in write_args.items() if k != key}
        opening = f"Hi! I'd like to {request_phrase(write)} for {label} {target}."
        if extras:
            opening += " Use these details: " + canonical_json(extras)
        refuse = (
            f"I'm sorry, I can't {request_phrase(write)} for {label} {target}: its {field_words} is {reason}, "
            "and our policy does not allow this change for it. Have a nice day."
        )
        other = others[0] if others else "X" + target
        read_target = call(read, **{key: target})
        oracle = [read_target, refuse]
        mutants = {
            "drop_required_call": [refuse],
            "swap_calls": [refuse, read_target],
            "wrong_argument": [call(read, **{key: other}), refuse],
            "forbidden_extra_call": [read_target, call(write, **write_args), refuse],
            "text_only": [refuse],
        }
        return Scenario(
            state=new_state(records),
            bindings={"target": target, "reason": reason, "reason_words": reason_words},
            opening=opening,
            requests=[UserRequest.write(write, key, target)],
            oracle=oracle,
            mutants=mutants,
        )


class PolicyRefusal(Family):
    name = "policy_refusal"
    summary = "Do not make a write the policy forbids for this record; refuse and explain which rule forbids it."
    roles = ("read", "write", "key")
    params = RefusalParams
    env_class = RefusalEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write = roles["key"], roles["read"], roles["write"]
        read_target = CallRef(tool=read, args={key: {"$var": "target"}})
        return Check(clauses=[
            CallMade(id="read_target", weight=1, call=read_target, description="check the record against the policy"),
            NoCall(id="no_forbidden_write", weight=2, requires=["read_target"], call=CallRef(tool=write)),
            Communicated(
                id="explained", weight=1, requires=["read_target"],
                values=[{"$var": "reason"}, {"$var": "reason_words"}], mode="any", after=read_target,
                description="explain which rule forbids the request",
            ),
        ])

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.refusal(view, args["tool"])

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w = roles.get("write")
        return (_no_write(w), {"tool": w}) if w else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        if not ctx.has_gt:
            return []
        return [
            Proposal(
                name=f"no_unwarranted_{w}",
                description=f"Do not call {w} when the policy forbids it or the user's request does not call for it; "
                "refuse and explain instead.",
                roles=ctx.roles_for(w),
                label_check=_no_write(w),
                label_args={"tool": w},
            )
            for w in ctx.writes
            if ctx.gt_counts[w]
        ]

    def infer_params(self, roles: dict[str, str], index: ResultIndex) -> tuple[dict[str, Any], str]:
        return infer_gate(roles, index)


def _no_write(write: str) -> Check:
    return Check(clauses=[NoCall(id="no_forbidden_write", call=CallRef(tool=write))])


register_family(PolicyRefusal())
