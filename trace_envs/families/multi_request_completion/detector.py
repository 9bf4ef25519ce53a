"""Detector of multi_request_completion: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.mining import departures, labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.mining.gates import infer_gate
from trace_envs.trajectories.results import ResultIndex


def _write_made(write: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)], clauses=[CallMade(id="write_made", call=CallRef(tool=write))])


class MultiRequestCompletionDetector(Detector):
    task = "multi_request_completion"
    teaches = ("missing_write",)
    generic = True

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """From the run's departures where it has expected actions: LACKING only when an expected write was never
        made (a write made with another argument is another family's failure); else every expected write matched."""
        return departures.missing(view, args.get("tool")) or labeling.completion(view, args.get("tool"))

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        gate, note = infer_gate(roles, index, policy, rules)
        return gate, note

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w = roles.get("write")
        return (_write_made(w), {"tool": w}) if w else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        if not ctx.has_gt:
            return []
        out = [
            Proposal(
                name=f"complete_every_{w}",
                description=f"Complete every {w} the user's requests call for, with the expected arguments, not only "
                "the first.",
                roles=ctx.roles_for(w),
                label_check=_write_made(w),
                label_args={"tool": w},
            )
            for w in ctx.writes
            if ctx.gt_counts[w]
        ]
        if len(ctx.writes) >= 2:
            top = max(ctx.writes, key=lambda x: (ctx.gt_counts[x], x))
            out.append(Proposal(
                name="complete_all_required_writes",
                description="Complete every write the user's requests call for (all of them, each with the expected "
                "arguments) before ending the conversation.",
                roles=ctx.roles_for(top),
                label_check=Check(clauses=[CallMade(id="some_write", call=CallRef(kind="write"))]),
                label_args={"tool": None},
                extra_tools=list(ctx.writes),
            ))
        return out


register_detector(MultiRequestCompletionDetector())
