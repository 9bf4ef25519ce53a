"""Trust a file's expected actions only as far as its runs bear them out.

Two checks, per file:

- **graded on another task**: a tau2 simulation whose `task_id` names a task whose expected actions are not the ones
  it was graded on (`reward_info.action_checks`). The reader has already read it as the task whose actions were
  graded (see `trace_envs.trajectories.formats.tau2`); here the file gets its warning, with the share of its
  simulations affected.
- **passed runs that do not make their expected actions**: a passed run makes what its task expects (its expected
  actions, made by its successful calls with their arguments). When on most tasks of a file the passed runs make
  fewer than half of them, the expected actions are not this file's: they are set aside (`set_aside`), and the runs
  are read without them, as a source without expected actions is.
- **no task expects anything**: every run of a file carries an expected-action list and every list is empty. A
  benchmark's tasks expect writes somewhere; an empty list on every task is a converter's placeholder, not a claim
  that no task needs a write. Set aside the same way (the passed runs then stand in for them).

`TrustAudit` takes runs one at a time (so that `inspect` can stream); `audit` and `set_aside` work on a list.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Iterable, Literal

from pydantic import BaseModel

from trace_envs.trajectories.models import PROSE_ARGS, Run

MADE_SHARE = 0.5
"""A passed run that makes fewer than this share of its expected actions does not bear them out."""
MOST_TASKS = 0.5
"""More than this share of a file's tasks (with passed runs) not borne out: the expected actions are not the file's."""
MIN_TASKS = 3
"""Fewer tasks than this with passed runs say too little to set expected actions aside."""


class TrustFinding(BaseModel):
    """One file whose expected actions do not check out, and what was done about it."""

    file: str
    kind: Literal["graded_on_another_task", "expected_actions_not_made", "expected_actions_all_empty"]
    affected: int
    total: int
    example: str = ""

    @property
    def share(self) -> float:
        return self.affected / self.total if self.total else 0.0

    @property
    def message(self) -> str:
        name = self.file
        if self.kind == "graded_on_another_task":
            return (f"{name}: {self.affected} of {self.total} simulations ({self.share:.0%}) name a task_id whose "
                    f"expected actions are not the ones they were graded on (reward_info.action_checks; "
                    f"{self.example}): each is read as the task whose actions it was graded on")
        if self.kind == "expected_actions_all_empty":
            return (f"{name}: every expected-action list of its {self.total} tasks is empty, though their runs make "
                    "calls: the lists say nothing; they are set aside and the runs read without them (expected "
                    "actions inferred from the passed runs)")
        return (f"{name}: on {self.affected} of {self.total} tasks ({self.share:.0%}) the passed runs do not make "
                f"their expected actions ({self.example}): the expected actions are not this file's; they are set "
                "aside and the runs read without them")


def _canon(arguments: dict) -> str:
    return json.dumps({k: v for k, v in arguments.items() if k not in PROSE_ARGS}, sort_keys=True, default=str)


def made_share(run: Run) -> float | None:
    """The share of the run's expected agent actions that its successful calls make, with their arguments (prose
    ones aside); None when it expects none."""
    expected = [g for g in run.ground_truth or [] if g.requestor == "agent"]
    if not expected:
        return None
    made = {(c.name, _canon(c.arguments)) for c in run.agent_calls if not c.error}
    return sum((g.name, _canon(g.arguments)) in made for g in expected) / len(expected)


class _File:
    def __init__(self) -> None:
        self.runs = 0
        self.regraded = 0
        self.example = ""
        self.passed: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # task -> [passed runs, of them made theirs]
        self.listed: set[str] = set()  # tasks whose runs carry an expected-action list
        self.any_expected = False  # any of those lists names an agent action
        self.calls = False  # any run makes a call


class TrustAudit:
    """The checks of this module over runs added one at a time; `findings()` at the end."""

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}

    def add(self, run: Run) -> None:
        f = self._files.setdefault(run.file or "runs", _File())
        f.runs += 1
        if "task_id_in_file" in run.meta:
            f.regraded += 1
            if not f.example:
                graded = ", ".join(run.meta.get("graded_actions") or [])
                f.example = f'task {run.meta["task_id_in_file"]} graded with {graded or "other actions"}'
        if run.ground_truth is not None:
            f.listed.add(run.task_id)
            f.any_expected = f.any_expected or any(g.requestor == "agent" for g in run.ground_truth)
        f.calls = f.calls or bool(run.agent_calls)
        if run.success and run.ground_truth is not None:
            share = made_share(run)
            if share is not None:
                counts = f.passed[run.task_id]
                counts[0] += 1
                counts[1] += share >= MADE_SHARE

    def findings(self) -> list[TrustFinding]:
        out = []
        for file, f in self._files.items():
            if f.regraded:
                out.append(TrustFinding(file=file, kind="graded_on_another_task", affected=f.regraded, total=f.runs,
                                        example=f.example))
            not_made = sorted(t for t, (runs, made) in f.passed.items() if made < runs / 2 or not made)
            if len(f.passed) >= MIN_TASKS and len(not_made) > MOST_TASKS * len(f.passed):
                runs = sum(f.passed[t][0] for t in not_made)
                out.append(TrustFinding(file=file, kind="expected_actions_not_made", affected=len(not_made),
                                        total=len(f.passed), example=f"{runs} passed runs, e.g. task {not_made[0]}"))
            elif len(f.listed) >= MIN_TASKS and not f.any_expected and f.calls:
                out.append(TrustFinding(file=file, kind="expected_actions_all_empty", affected=len(f.listed),
                                        total=len(f.listed)))
        return out


def audit(runs: Iterable[Run]) -> list[TrustFinding]:
    """What does not check out in the runs' files (see the module)."""
    a = TrustAudit()
    for run in runs:
        a.add(run)
    return a.findings()


def set_aside(runs: list[Run], findings: list[TrustFinding]) -> list[Run]:
    """`runs` with the expected actions of the files whose passed runs do not make them set aside (None), each such run
    noting why in `meta["expected_actions_set_aside"]`; the other runs as they are."""
    files = {f.file: f.message for f in findings if f.kind != "graded_on_another_task"}
    if not files:
        return runs
    return [r.model_copy(update={"ground_truth": None, "meta": {**r.meta, "expected_actions_set_aside": files[key]}})
            if (key := r.file or "runs") in files and r.ground_truth is not None else r for r in runs]

