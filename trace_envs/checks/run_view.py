"""A real run prepared once for labeling with many checks: its trace, its ground truth as steps, and the tools it
called successfully."""

from __future__ import annotations

from typing import Any

from trace_envs.checks.attribution import BORROWED, Attribution, attribute
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.trajectories.models import Run


class RunView:
    """A run prepared once for labeling with many candidates: its trace, ground truth steps and call names.

    `gt_steps` / `gt_names` are None when the source carries no ground truth (not the same as an empty one). `called`
    holds the tools the agent called with a result that is not an error: a run whose only write failed never
    exercised that write, as no positive clause counts an errored call."""

    __slots__ = ("run", "trace", "gt_steps", "gt_names", "called", "kinds", "memo", "_user_text", "_attribution")

    def __init__(self, run: Run, tool_kinds: dict[str, str]) -> None:
        self.run = run
        self.kinds = tool_kinds
        self.trace = ActionTrace.from_run(run, tool_kinds)
        gt = [g for g in run.ground_truth or [] if g.requestor == "agent"] if run.ground_truth is not None else None
        self.gt_steps = (
            [TraceStep.of_call(g.name, g.arguments, None, False) for g in gt] if gt is not None else None
        )
        self.gt_names = {g.name for g in gt} if gt is not None else None
        self.called = {s.name for s in self.trace.steps if s.kind == "call" and not s.error}
        # what one labeler derived from the run and the next candidate's labeler reads again, by the deriver's key
        self.memo: dict[str, Any] = {}
        self._user_text: str | None = None
        self._attribution: Attribution | None | bool = False

    @property
    def attribution(self) -> Attribution | None:
        """The run's departures from its expected actions (computed once); None without ground truth, and None when
        the expected actions were borrowed from a similar task (`borrowed_attribution` has them): another task's
        calls say which writes such a task makes, not whether this record allowed them."""
        if self.run.meta.get("expected") == BORROWED:
            return None
        return self.borrowed_attribution

    @property
    def borrowed_attribution(self) -> Attribution | None:
        """The departures from the run's expected actions, wherever they came from."""
        if self._attribution is False:
            self._attribution = attribute(self.run, self.kinds)
        return self._attribution  # type: ignore[return-value]

    @attribution.setter
    def attribution(self, value: Attribution | None) -> None:
        self._attribution = value

    def user_text(self) -> str:
        """Every user message of the run, lower-cased, joined by newlines."""
        if self._user_text is None:
            self._user_text = "\n".join(s.text or "" for s in self.trace.steps if s.kind == "user").lower()
        return self._user_text
