"""Precondition before write: look the record up and check the field the policy turns on before writing.

The user asks for a write on a record; the policy allows it only when a field of the record (`params.field`) has one
of `params.allowed`, and forbids it for `params.blocked`. Half the scenarios are allowed (read, then write), half
blocked (read, then refuse and say which value forbids it); the spec's rules hold the policy's other conditions
neutral, so the field alone decides. Bindings: `target` (the record's key), `allowed`, `reason` (the field's value),
`reason_words` (it in words).

Example episode (airline, field `cabin`, allowed `business`):

    user:  Hi! My user id is omar_davis_3817. I'd like to cancel reservation QZ7Y2K.
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "cabin": "economy", ...}
    agent: Could you tell me the reason for cancellation?
    user:  My reason for cancellation is change of plan.
    agent: I'm sorry, but I can't cancel reservation QZ7Y2K: its cabin is economy, and our policy does not allow it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallRef, Check, Order
from trace_envs.families import labeling
from trace_envs.families.base import Family, Label, Proposal, ProposalContext, infer_gate
from trace_envs.families.kit import gate_of, gated_write_check, gated_write_scenario
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario
from trace_envs.runtime.world import RecordEnv
from trace_envs.trajectories.results import ResultIndex

ALLOWED_SHARE = 0.5


class PreconditionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field the policy conditions the write on (a dotted path).")
    allowed: list[Any] = Field(min_length=1, description="Values of `field` that permit the write.")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that forbid it.")


class PreconditionEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        gate = gate_of(self.SPEC.params)
        assert gate is not None
        return gated_write_scenario(self.SPEC, rng, gate, self.class_draw < ALLOWED_SHARE)


class PreconditionBeforeWrite(Family):
    name = "precondition_before_write"
    summary = "Look the record up and check the field the policy turns on before a write; refuse with the reason."
    roles = ("read", "write", "key")
    params = PreconditionParams
    env_class = PreconditionEnv

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        return gated_write_check(roles, write_weight=1, order_weight=2, explain_weight=1)

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

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        return infer_gate(roles, index, policy, rules)

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles[k] for k in ("read", "write") if roles.get(k)]


def _read_before_write(read: str, write: str, key: str | None) -> Check:
    return Check(
        applies_if=[CallRef(tool=write)],
        clauses=[Order(id="read_before_write", first=CallRef(tool=read), then=CallRef(tool=write), join=[key] if key else [])],
    )


register_family(PreconditionBeforeWrite())
