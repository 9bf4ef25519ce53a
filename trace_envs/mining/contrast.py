"""Contrast: group runs of comparable work so passes and failures of the same (or similar) task are compared.

Runs group by task id. Where a task has no repeats (one run per task, or all runs of a task share the outcome), runs
join groups of similar tasks: the same ground-truth action names and a similar first user message (token Jaccard).
A group holding both a pass and a failure gives contrasting pairs, which the LLM proposer reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from trace_envs.trajectories.models import Run

_WORD = re.compile(r"[a-z]{3,}")
_STOP = frozenset("the and you for your with that this have want would like please can are was not but".split())


@dataclass
class TaskGroup:
    key: str
    runs: list[Run] = field(default_factory=list)

    @property
    def passed(self) -> list[Run]:
        return [r for r in self.runs if r.success]

    @property
    def failed(self) -> list[Run]:
        return [r for r in self.runs if not r.success]

    @property
    def contrasting(self) -> bool:
        return bool(self.passed) and bool(self.failed)


def _tokens(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def gt_signature(run: Run) -> str:
    if not run.ground_truth:
        return "-"
    return ",".join(sorted({g.name for g in run.ground_truth if g.requestor == "agent"})) or "-"


def group_runs(runs: Iterable[Run], *, similarity: float = 0.3) -> list[TaskGroup]:
    """Groups by task id; non-contrasting task groups are merged with similar tasks (same ground-truth action names,
    first user messages with token Jaccard >= `similarity`). Deterministic given the run order."""
    by_task: dict[str, TaskGroup] = {}
    for run in runs:
        by_task.setdefault(run.task_id, TaskGroup(key=f"task:{run.task_id}")).runs.append(run)
    groups = [g for g in by_task.values() if g.contrasting]
    lonely = [g for g in by_task.values() if not g.contrasting]
    # merge the rest by ground-truth signature, then greedily by first-message similarity
    by_sig: dict[str, list[TaskGroup]] = {}
    for g in lonely:
        by_sig.setdefault(gt_signature(g.runs[0]), []).append(g)
    for sig, members in by_sig.items():
        clusters: list[tuple[frozenset[str], TaskGroup]] = []
        for g in members:
            toks = _tokens(g.runs[0].request_text())
            for ctoks, cg in clusters:
                if _jaccard(toks, ctoks) >= similarity:
                    cg.runs.extend(g.runs)
                    break
            else:
                clusters.append((toks, TaskGroup(key=f"similar:{sig}:{g.runs[0].task_id}", runs=list(g.runs))))
        groups.extend(cg for _, cg in clusters)
    return groups


def contrast_pairs(groups: list[TaskGroup], max_pairs: int = 20) -> list[tuple[Run, Run]]:
    """(passed run, failed run) pairs, one per contrasting group first, round-robin, up to `max_pairs`."""
    pools = [(g.passed, g.failed) for g in groups if g.contrasting]
    pairs: list[tuple[Run, Run]] = []
    depth = 0
    while len(pairs) < max_pairs and pools:
        added = False
        for passed, failed in pools:
            if depth < len(failed) and len(pairs) < max_pairs:
                pairs.append((passed[depth % len(passed)], failed[depth]))
                added = True
        if not added:
            break
        depth += 1
    return pairs


def contrast_summary(groups: list[TaskGroup]) -> dict[str, int]:
    return {
        "groups": len(groups),
        "contrasting_groups": sum(g.contrasting for g in groups),
        "task_groups": sum(g.key.startswith("task:") for g in groups),
        "similar_task_groups": sum(g.key.startswith("similar:") for g in groups),
    }
