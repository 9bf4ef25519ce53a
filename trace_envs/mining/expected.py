"""Passed runs as ground truth where a source carries none.

Most users' logs carry no expected actions: an agent's runs and their outcomes, nothing more. The contrast still says
what a correct run does: the runs of the same task that passed. For each task with a passed run, its expected actions
are taken as the state-changing calls the passed runs agree on (the most common set of such calls, each with the
arguments whose values every passed run making it gave: an argument the passed runs disagree on, a free-text reason,
a date they picked differently, is left free). A task with no passed run borrows the calls of the most similar task
that has one (by the words of the first user message and the tools called), by name only: another task's ids and
amounts say nothing about this one, and whether this task's record allowed a write is not what the other's showed: the
labelers read such borrowed actions for requests left undone only (`RunView.attribution` is None for them). Expected
actions are marked inferred (`Run.meta["expected"]`; `Run.meta["declined"]` where the passed runs mostly heard the user
say no to a confirmation, so a write they did not make is no evidence of a rule), and the attribution compares only
the arguments they name (`trace_envs.checks.attribution`), so every family labels from departures as it does on a
source that carries them, and `diagnose` reads such logs too.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from typing import Iterable, Iterator

from trace_envs.checks.attribution import BORROWED, INFERRED, state_changing
from trace_envs.trajectories.models import GroundTruthAction, Run
from trace_envs.trajectories.results import declined_confirmation

SIMILAR = BORROWED
MIN_SIMILARITY = 0.5  # token Jaccard of first user messages (ids removed) before a task borrows another's actions
_WORD = re.compile(r"[a-z]{3,}")
_STOP = frozenset("the and you for your with that this have want would like please can are was not but".split())


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _writes(run: Run, kinds: dict[str, str]) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in run.agent_calls
            if not c.error and state_changing(c.name, c.arguments, kinds)]


def _tokens(run: Run) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(run.request_text().lower()) if w not in _STOP)


def _consensus(passed: list[Run], kinds: dict[str, str]) -> list[GroundTruthAction]:
    """The state-changing calls the passed runs of one task agree on: the most common multiset of tool names (ties:
    the first run's), each call with the arguments every passed run making that call gave the same value."""
    sets = [tuple(sorted(n for n, _ in _writes(r, kinds))) for r in passed]
    names = Counter(sets).most_common(1)[0][0] if sets else ()
    agreeing = [r for r, s in zip(passed, sets) if s == names]
    out = []
    for name, args in _writes(agreeing[0], kinds) if agreeing else []:
        others = [[a for n, a in _writes(r, kinds) if n == name] for r in agreeing[1:]]
        kept = {}
        for arg, value in args.items():
            if all(any(_canon(a.get(arg)) == _canon(value) for a in calls) for calls in others):
                kept[arg] = value
        out.append(GroundTruthAction(name=name, arguments=kept))
    return out


class ExpectedFromPassed:
    """Expected actions for runs whose source carries none, learned from the passed runs of `runs` (see the module
    docstring). `fill(run)` returns the run with them (marked inferred), or the run as it is when it has its own or
    nothing can stand in for them."""

    def __init__(self, runs: Iterable[Run], kinds: dict[str, str]) -> None:
        self.kinds = kinds
        by_task: dict[str, list[Run]] = defaultdict(list)
        self.tokens: dict[str, frozenset[str]] = {}
        self.tools: dict[str, frozenset[str]] = {}
        for run in runs:
            if run.ground_truth is not None:
                continue
            by_task[run.task_id].append(run)
            self.tokens.setdefault(run.task_id, _tokens(run))
            self.tools[run.task_id] = self.tools.get(run.task_id, frozenset()) | {c.name for c in run.agent_calls}
        self.expected: dict[str, list[GroundTruthAction]] = {}
        # tasks whose passed runs mostly heard the user say no to a confirmation: a write they did not make was the
        # user's choice, not something the record forbade
        self.declined: set[str] = set()
        for task, task_runs in by_task.items():
            passed = [r for r in task_runs if r.success]
            if passed:
                self.expected[task] = _consensus(passed, kinds)
                if sum(map(declined_confirmation, passed)) * 2 > len(passed):
                    self.declined.add(task)
        self.borrowed: dict[str, tuple[str, list[GroundTruthAction]]] = {}
        for task in by_task:
            if task not in self.expected:
                found = self._similar(task)
                if found is not None:
                    self.borrowed[task] = (found, [GroundTruthAction(name=g.name) for g in self.expected[found]])

    def _similar(self, task: str) -> str | None:
        mine, tools = self.tokens.get(task, frozenset()), self.tools.get(task, frozenset())
        best, score = None, 0.0
        for other in sorted(self.expected):
            theirs = self.tokens[other]
            union = mine | theirs
            jaccard = len(mine & theirs) / len(union) if union else 0.0
            if jaccard >= MIN_SIMILARITY and tools & self.tools[other] and jaccard > score:
                best, score = other, jaccard
        return best

    @property
    def active(self) -> bool:
        """Whether any run got expected actions from the passed runs."""
        return bool(self.expected or self.borrowed)

    def fill(self, run: Run) -> Run:
        if run.ground_truth is not None:
            return run
        if run.task_id in self.expected:
            gt, how = self.expected[run.task_id], INFERRED
        elif run.task_id in self.borrowed:
            gt, how = self.borrowed[run.task_id][1], SIMILAR
        else:
            return run
        meta = {**run.meta, "expected": how}
        if how == INFERRED and run.task_id in self.declined:
            meta["declined"] = True
        return run.model_copy(update={"ground_truth": list(gt), "meta": meta})

    def fill_all(self, runs: Iterable[Run]) -> Iterator[Run]:
        for run in runs:
            yield self.fill(run)


