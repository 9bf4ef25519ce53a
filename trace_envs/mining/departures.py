"""Labelling a real run from its departures from the expected actions (see `trace_envs.checks.attribution`).

Where a source carries expected actions, each family labels a run by the departures of its own kind, so that a
candidate's Cov and Delta count the failures it teaches, not every failure of the run:

- `missing`: completion. LACKING when an expected write of `tool` (any write when None) was never made (NA when an
  expected write was tried and failed: an error not recovered from);
- `unwarranted`: refusal. LACKING when the run made a `tool` write the expected actions do not make;
- `arg_kind`: an argument departure of `kinds` on `tool` (`arg`, or any argument when None): another listed option,
  a wrong number, an invented value;
- `handoff`: LACKING on a transfer made or withheld against the expected actions;
- `user_action`: LACKING when a user-side action the expected actions include was never performed.

Each returns None when the run carries no expected actions, so the family falls back to its own predicates.
"""

from __future__ import annotations

from trace_envs.checks.attribution import state_changing
from trace_envs.checks.run_view import RunView
from trace_envs.mining.detector import Label
from trace_envs.trajectories.handoff import is_handoff


def _expected(view: RunView) -> tuple[frozenset[str], int]:
    """The names of the agent's state-changing expected actions (hand-offs included), and how many of those actions
    are no hand-off; read once per run, whichever candidate asks first."""
    got = view.memo.get("departures.expected")
    if got is None:
        names = [g.name for g in view.run.ground_truth or []
                 if g.requestor == "agent" and state_changing(g.name, g.arguments, view.kinds)]
        got = view.memo["departures.expected"] = (frozenset(names),
                                                   sum(not is_handoff(n, view.kinds) for n in names))
    return got


def _expects(view: RunView, tool: str | None) -> bool:
    """Whether the expected actions include `tool` (None: any write that is not a hand-off)."""
    names, writes = _expected(view)
    return tool in names if tool else writes > 0


def missing(view: RunView, tool: str | None) -> Label | None:
    """NA unless the task asked for several writes (one of them of `tool`): dropping the only write a task needs is
    a refusal, a hand-off or a stop, which other families label; here one of several requests was left undone."""
    a = view.borrowed_attribution
    if a is None:
        return None
    if not _expects(view, tool) or _n_expected(view) < 2:
        return "NA"
    missing = a.of("missing_write", tool)
    if any(d.instead == "call_failed" for d in a.of("missing_write")):
        return "NA"  # a write was tried and failed: what went missing after it is recovering from the error, not a
        # request dropped (another family's capability)
    return "LACKING" if missing else "PRESENT"


def _n_expected(view: RunView) -> int:
    return _expected(view)[1]


def unwarranted(view: RunView, tool: str, asked: bool) -> Label | None:
    """`asked`: the user asked for the kind of action `tool` does (the run was in a position to make it)."""
    a = view.attribution
    if a is None:
        return None
    if a.of("unwarranted_write", tool):
        return "LACKING"
    return "PRESENT" if asked or _expects(view, tool) else "NA"


def arg_kind(view: RunView, tool: str | None, arg: str | None, kinds: tuple[str, ...]) -> Label | None:
    """`tool` None: any write."""
    a = view.attribution
    if a is None:
        return None
    made = tool in view.called if tool else any(
        view.kinds.get(t) == "write" and not is_handoff(t, view.kinds) for t in view.called)
    if not _expects(view, tool) or not made:
        return "NA"
    if any(a.of(k, tool, arg) for k in kinds):
        return "LACKING"
    return "PRESENT"


def handoff(view: RunView, tool: str) -> Label | None:
    a = view.attribution
    if a is None:
        return None
    if a.of("unwarranted_handoff", tool) or a.of("missing_handoff", tool):
        return "LACKING"
    return "PRESENT" if _expects(view, tool) or tool in view.called else "NA"


def user_action(view: RunView, tool: str | None) -> Label | None:
    a = view.attribution
    if a is None:
        return None
    expected = [g for g in view.run.ground_truth or [] if g.requestor == "user" and (tool is None or g.name == tool)]
    if not expected:
        return "NA"
    return "LACKING" if a.of("user_action_missing", tool) else "PRESENT"
