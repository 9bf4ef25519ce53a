"""Detector of confirmation_before_write: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trace_envs.checks.asking import asks, words_for
from trace_envs.checks.clauses import CallRef, Check, Confirmation
from trace_envs.checks.run_view import RunView
from trace_envs.language.confirmations import declines
from trace_envs.language.patterns import words_regex
from trace_envs.language.words import action_words
from trace_envs.mining import labeling
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector


def _confirmed(write: str, said: list[str] | None = None) -> Check:
    """A yes to a question naming the write before it; by the tool's words, or by the words the domain's users ask
    for it with (`said`): an agent that restates the request ("make appointment A1 a video visit?") names the
    action as the user did."""
    words = _write_words(write, said) if said else None
    return Check(applies_if=[CallRef(tool=write)],
                 clauses=[Confirmation(id="confirmed", call=CallRef(tool=write), action_words=words)])


def _write_words(write: str, said: list[str] | None) -> list[str]:
    return list(dict.fromkeys([*action_words(write), *(said or [])]))


def _named(words: list[str], text: str) -> int:
    """How many of `words` the text names."""
    return sum(bool(words_regex((w,)).search(text)) for w in words)


def asked_and_heard_no(view: RunView, check: Check, tool: str, rivals: Sequence[list[str]] = ()) -> bool:
    """Whether the agent asked to confirm `tool`'s action and the user's next message said no: the capability at
    work in a run that rightly made no write (its user was not ready), which would otherwise say nothing. With no
    write to tie the question to, it must name more of this write's words than of any other write's (`rivals`):
    "take enrollment EN1 pass/fail?" is about the grading option, not `course_sections.enroll`."""
    clause = next((c for c in check.clauses if isinstance(c, Confirmation)), None)
    if clause is None:
        return False
    words: list[str] | None = None
    reply = None  # the first user message after the step at hand, walking back from the end
    for step in reversed(view.trace.steps):
        if step.kind == "user":
            reply = step
            continue
        if step.kind != "say":
            continue
        # the user's no first: one search of a short reply, where most questions of a labelled run hear a yes
        if reply is None or not declines(reply.text):
            continue
        if words is None:
            words = words_for(clause.call, clause.action_words, view.trace, tool)
        if not asks(step.text, clause.ask_pattern, words, []):
            continue
        if _named(words, step.text) > max((_named(r, step.text) for r in rivals), default=0):
            return True
    return False


class ConfirmationBeforeWriteDetector(Detector):
    task = "confirmation_before_write"

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        """PRESENT or LACKING by the confirmation of each write the run made; PRESENT as well for a run that made
        none because the user said no to the agent's question (before, NA: only the runs that wrote were weighed,
        so where a write the user agreed to passes anyway, the contrast rested on a handful of confirming runs)."""
        tool = args.get("tool")
        if tool not in view.called and asked_and_heard_no(view, check, tool, args.get("rivals") or []):
            return "PRESENT"
        return labeling.exercised(view, check, tool)

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
                label_args={"tool": w, "rivals": [_write_words(o, ctx.index.asked_words.get(o))
                                                  for o in ctx.writes if o != w]},
            )
            for w in ctx.writes
        ]


register_detector(ConfirmationBeforeWriteDetector())
