"""Detector of confirmation_before_write: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.clauses import CallRef, Check, Confirmation
from trace_envs.language.words import action_words
from trace_envs.mining import labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector


def _confirmed(write: str, said: list[str] | None = None) -> Check:
    """A yes to a question naming the write before it; by the tool's words, or by the words the domain's users ask
    for it with (`said`): an agent that restates the request ("make appointment A1 a video visit?") names the
    action as the user did."""
    words = list(dict.fromkeys([*action_words(write), *said])) if said else None
    return Check(applies_if=[CallRef(tool=write)],
                 clauses=[Confirmation(id="confirmed", call=CallRef(tool=write), action_words=words)])


class ConfirmationBeforeWriteDetector(Detector):
    task = "confirmation_before_write"

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        return labeling.exercised(view, check, args.get("tool"))

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        w = roles.get("write")
        return (_confirmed(w), {"tool": w}) if w else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        return [
            Proposal(
                name=f"confirm_before_{w}",
                description=f"Before calling {w}, list the action details and get the user's explicit confirmation "
                "(yes).",
                roles=ctx.roles_for(w),
                label_check=_confirmed(w, ctx.index.asked_words.get(w)),
                label_args={"tool": w},
            )
            for w in ctx.writes
        ]


register_detector(ConfirmationBeforeWriteDetector())
