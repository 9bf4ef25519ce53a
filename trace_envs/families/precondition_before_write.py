"""Precondition before write: look the record up and check the field the policy turns on before writing.

The user asks for a write on a record; the policy allows it only when a field of the record (`params.field`) has one
of `params.allowed`, and forbids it for `params.blocked`. The agent must read the record first, then write, or refuse
and tell the user the reason. Bindings: `target` (the record's key), `allowed` (whether the write is allowed), `reason`
(the field's value).

Example episode (airline, field `cabin`, allowed `business`):

    user:  Hi! I'd like to cancel the reservation for reservation id QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "cabin": "economy", ...}
    agent: I'm sorry, I can't do that: the cabin of QZ7Y2K is economy, and policy does not allow it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallMade, CallRef, Check, Communicated, NoCall, Order
from trace_envs.families import labeling
from trace_envs.families.base import Family, Label, Proposal, ProposalContext, infer_gate
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario, UserRequest
from trace_envs.runtime.phrases import done_message, request_phrase
from trace_envs.runtime.world import RecordEnv, call, canonical_json, fill_arguments, make_records, new_state
from trace_envs.trajectories.results import ResultIndex

ALLOWED_SHARE = {"easy": 0.7, "medium": 0.5, "hard": 0.5}


class PreconditionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field the policy conditions the write on.")
    allowed: list[Any] = Field(min_length=1, description="Values of `field` that permit the write.")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that forbid it.")


class PreconditionEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        spec = self.SPEC
        roles, params, knobs = spec.roles, spec.params, spec.knobs
        read, write, key = roles["read"], roles["write"], roles["key"]
        field = params["field"]
        records = make_records(spec, read, key, knobs.entities + knobs.distractors, rng)
        ids = list(records)
        target, others = ids[0], ids[1:]
        allowed = bool(rng.random() < ALLOWED_SHARE[knobs.difficulty])
        values = params["allowed"] if allowed else params["blocked"]
        reason = values[int(rng.integers(len(values)))]
        records[target][field] = reason
        for rid in others:
            pool = params["allowed"] + params["blocked"]
            records[rid][field] = pool[int(rng.integers(len(pool)))]
        write_args = fill_arguments(spec.tool(write), {key: target})
        extras = {k: v for k, v in write_args.items() if k != key}
        opening = f"Hi! I'd like to {request_phrase(write)} for {key.replace('_', ' ')} {target}."
        if extras:
            opening += " Use these details: " + canonical_json(extras)
        done = done_message(write, target)
        refuse = (
            f"I'm sorry, I can't do that: the {field.replace('_', ' ')} of {target} is {reason}, "
            "and policy does not allow it."
        )
        wrong = fill_arguments(spec.tool(write), {key: others[0]}) if others else dict(write_args, **{key: "X" + target})
        if allowed:
            oracle = [call(read, **{key: target}), call(write, **write_args), done]
            mutants = {
                "drop_required_call": [call(write, **write_args), done],
                "swap_calls": [call(write, **write_args), call(read, **{key: target}), done],
                "wrong_argument": [call(read, **{key: target}), call(write, **wrong), done],
                "forbidden_extra_call": [
                    call(read, **{key: target}), call(write, **write_args), call(write, **wrong), done,
                ],
                "text_only": [done],
            }
        else:
            oracle = [call(read, **{key: target}), refuse]
            mutants = {
                "drop_required_call": [refuse],
                "swap_calls": [refuse, call(read, **{key: target})],
                "wrong_argument": [call(read, **{key: others[0] if others else "X" + target}), refuse],
                "forbidden_extra_call": [call(read, **{key: target}), call(write, **write_args), refuse],
                "text_only": [refuse],
            }
        return Scenario(
            state=new_state(records),
            bindings={"target": target, "allowed": allowed, "reason": reason},
            opening=opening,
            requests=[UserRequest.write(write, key, target)],
            oracle=oracle,
            mutants=mutants,
        )


class PreconditionBeforeWrite(Family):
    name = "precondition_before_write"
    summary = "Look the record up and check the field the policy turns on before a write; refuse with the reason."
    roles = ("read", "write", "key")
    params = PreconditionParams
    env_class = PreconditionEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        key, read, write = roles["key"], roles["read"], roles["write"]
        target = {key: {"$var": "target"}}
        read_target = CallRef(tool=read, args=target)
        return Check(clauses=[
            CallMade(id="read_target", weight=1, call=read_target, description=f"look up the record with {read}"),
            Order(
                id="write_after_read", weight=2, when="allowed", requires=["read_target"], first=read_target,
                then=CallRef(tool=write, args=target), join=[key],
                description=f"perform {write} only after checking the record",
            ),
            NoCall(
                id="no_forbidden_write", weight=2, when="!allowed", requires=["read_target"],
                call=CallRef(tool=write, args=target), description=f"do not {write} when the precondition fails",
            ),
            Communicated(
                id="explained", weight=1, when="!allowed", requires=["read_target"], values=[{"$var": "reason"}],
                after=read_target, description="tell the user why the request cannot be done",
            ),
            NoCall(
                id="no_other_write", weight=1, requires=["read_target"],
                call=CallRef(tool=write, args={key: {"$not": {"$var": "target"}}}),
            ),
        ])

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.exercised(view, check, args.get("tool"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, w, k = roles.get("read"), roles.get("write"), roles.get("key")
        if not (r and w):
            return None
        return _read_before_write(r, w, k), {"tool": w}

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for w in ctx.writes:
            best = sorted(((cnt, r, k) for (r, ww, k), cnt in ctx.pairs.items() if ww == w), reverse=True)[:2]
            for _, r, k in best:
                out.append(Proposal(
                    name=f"read_{r}_before_{w}",
                    description=f"Before calling {w}, look up the record with {r} for the same {k} and check it "
                    "against the policy.",
                    roles={"read": r, "write": w, "key": k},
                    label_check=_read_before_write(r, w, k),
                    label_args={"tool": w},
                ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex) -> tuple[dict[str, Any], str]:
        return infer_gate(roles, index)

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles[k] for k in ("read", "write") if roles.get(k)]


def _read_before_write(read: str, write: str, key: str | None) -> Check:
    return Check(
        applies_if=[CallRef(tool=write)],
        clauses=[Order(id="read_before_write", first=CallRef(tool=read), then=CallRef(tool=write), join=[key] if key else [])],
    )


register_family(PreconditionBeforeWrite())
