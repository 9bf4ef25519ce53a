"""Detector of multi_request_completion: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from collections import Counter
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
        roles = {w: _roles(ctx, w) for w in ctx.writes if ctx.gt_counts[w]}
        out = [
            Proposal(
                name=f"complete_every_{w}",
                description=f"Complete every {w} the user's requests call for, with the expected arguments, not only "
                "the first.",
                roles=r,
                label_check=_write_made(w),
                label_args={"tool": w},
            )
            for w, r in roles.items() if r
        ]
        usable = [w for w, r in roles.items() if r]
        if len(ctx.writes) >= 2 and usable:
            top = max(usable, key=lambda x: (ctx.gt_counts[x], x))
            out.append(Proposal(
                name="complete_all_required_writes",
                description="Complete every write the user's requests call for (all of them, each with the expected "
                "arguments) before ending the conversation.",
                roles=dict(roles[top]),
                label_check=Check(clauses=[CallMade(id="some_write", call=CallRef(kind="write"))]),
                label_args={"tool": None},
                extra_tools=list(ctx.writes),
            ))
        return out


def _roles(ctx: ProposalContext, write: str) -> dict[str, str] | None:
    """The write's record as the runs show it: the read that looks it up before the write when one does; else the
    write alone, addressed by the id-like argument whose value users state (`cancel_hold(hold_id)` after "cancel my
    old hold H1234"; not a plan's name), never the user's own id (writing "every record" of one user is no list of
    requests); None without one."""
    identity = ctx.rules.identify_user if ctx.rules is not None else None
    if any(w == write for (_, w, _) in ctx.pairs):
        roles = ctx.roles_for(write)
        if roles.get("key") != identity:
            return roles
    stated: Counter = Counter()
    for run in ctx.runs:
        for c in run.agent_calls:
            if c.name != write or c.error:
                continue
            said = " ".join(m["content"] for m in run.messages[: c.message_index]
                            if m.get("role") == "user" and isinstance(m.get("content"), str))
            stated.update(a for a, v in c.arguments.items()
                          if isinstance(v, str) and len(v) >= 3 and any(ch.isdigit() for ch in v) and v in said
                          and a != identity
                          and not ctx.free_text(write, a))
    best = stated.most_common(1)
    return {"write": write, "key": best[0][0]} if best and best[0][1] >= 2 else None


register_detector(MultiRequestCompletionDetector())
