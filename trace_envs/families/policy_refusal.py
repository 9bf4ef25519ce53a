"""Policy refusal: refuse a write the policy forbids for this record, and say which rule forbids it.

The user requests a write; on most scenarios the policy forbids it for the record (`params.field`, a dotted path,
holds one of `params.blocked`), on the others it allows it (a value of `params.allowed`, or any other value the real
records show), so "always refuse" is not a policy that pays. The agent must look the record up, then refuse and tell
the user the blocking value, or do the write. The spec's rules hold the policy's other conditions neutral. Bindings:
`target`, `allowed`, `reason`, `reason_words` (the value as words: 'basic economy').

Example episode (airline, basic economy flights cannot be modified):

    user:  Hi! My user id is omar_davis_3817. I'd like to update the flights of reservation QZ7Y2K. Use these ...
    agent: get_reservation_details(reservation_id=QZ7Y2K)  -> {..., "cabin": "basic_economy", ...}
    agent: I'm sorry, but I can't update the flights of reservation QZ7Y2K: its cabin is basic economy, ...
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.checks.clauses import CallRef, Check, NoCall
from trace_envs.language.words import verb_synonyms
from trace_envs.families import departures, labeling
from trace_envs.families.base import Family, Label, Proposal, ProposalContext, infer_gate
from trace_envs.families.kit import gate_of, gated_write_check, gated_write_scenario
from trace_envs.families.registry import register_family
from trace_envs.runtime import Scenario
from trace_envs.runtime.world import Gate, RecordEnv, ScenarioError
from trace_envs.trajectories.invariants import values_at
from trace_envs.trajectories.results import ResultIndex

ALLOWED_SHARE = 0.4


class RefusalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str = Field(description="Record field whose value forbids the write (a dotted path).")
    blocked: list[Any] = Field(min_length=1, description="Values of `field` that forbid it.")
    allowed: list[Any] = Field(
        default_factory=list, description="Values that permit it (default: the other values the real records show)."
    )


class RefusalEnv(RecordEnv):
    def build_scenario(self, rng) -> Scenario:
        gate = gate_of(self.SPEC.params)
        assert gate is not None
        if not gate.allowed:
            read = self.SPEC.tool(self.SPEC.roles["read"])
            seen = {v for r in read.result_examples for v in values_at(r, gate.field) if isinstance(v, (str, int))}
            allowed = tuple(sorted((v for v in seen if v not in gate.blocked), key=str))
            if not allowed:
                raise ScenarioError(f"no real record shows a value of {gate.field} that allows the write")
            gate = Gate(field=gate.field, allowed=allowed, blocked=gate.blocked)
        return gated_write_scenario(self.SPEC, rng, gate, self.class_draw < ALLOWED_SHARE)


class PolicyRefusal(Family):
    name = "policy_refusal"
    summary = "Do not make a write the policy forbids for this record; refuse and explain which rule forbids it."
    roles = ("read", "write", "key")
    params = RefusalParams
    env_class = RefusalEnv
    teaches = ("unwarranted_write",)

    def check(self, roles: dict[str, str], params: dict[str, Any], requests: int = 2) -> Check:
        return gated_write_check(roles, write_weight=2, order_weight=1, explain_weight=1)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """LACKING when the run made a write of the tool that its expected actions do not make; PRESENT when the
        user asked for that kind of action (or it was expected) and no such write was made."""
        tool = args["tool"]
        asked = any(v in view.user_text() for v in verb_synonyms(tool))
        return departures.unwarranted(view, tool, asked) or labeling.refusal(view, tool)

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

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        return infer_gate(roles, index, policy, rules)


def _no_write(write: str) -> Check:
    return Check(clauses=[NoCall(id="no_forbidden_write", call=CallRef(tool=write))])


register_family(PolicyRefusal())
