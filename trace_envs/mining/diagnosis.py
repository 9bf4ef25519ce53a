"""The miner's diagnosis: why the failed runs failed, and which kept capability teaches each kind of failure.

`DiagnosisCollector` sees every run as it is labelled (its attribution is computed once, on the `RunView` the labelers
share) and keeps a bounded summary: per departure kind, the failed runs that show it and the tools it falls on, and
the attributions of the first `keep` failed runs for the report. `coverage` ties each kind to the kept capabilities
whose detector teaches it (`Detector.teaches`) and that label LACKING some failed run showing it. `restates_outcome`
flags a candidate whose labels are the source's own success criterion.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_envs.checks.attribution import KIND_TEXT, KINDS, Attribution
from trace_envs.checks.run_view import RunView
from trace_envs.mining.detector import get_detector
from trace_envs.mining.label import LACKING, PRESENT

MIN_SHARE = 0.15
MIN_RUNS = 5
RESTATES_AGREEMENT = 0.95


@dataclass
class Diagnosis:
    """Departures of the failed runs that carry expected actions (`failed_with_gt` of them)."""

    runs_with_gt: int = 0
    failed_with_gt: int = 0
    kind_runs: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    kind_tools: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    instead: Counter = field(default_factory=Counter)
    failed: dict[str, Attribution] = field(default_factory=dict)
    coverage: dict[str, list[str]] = field(default_factory=dict)

    def table(self) -> list[dict[str, Any]]:
        """One row per departure kind the failed runs show: runs, share of the failed runs with expected actions,
        tools, and (once `cover` ran) the kept capabilities that teach it; `major` when share >= 0.15 and >= 5 runs."""
        rows = []
        for kind in KINDS:
            ids = self.kind_runs.get(kind, [])
            if not ids:
                continue
            share = len(ids) / self.failed_with_gt if self.failed_with_gt else 0.0
            rows.append({
                "kind": kind, "text": KIND_TEXT[kind], "runs": len(ids), "share": round(share, 3),
                "tools": dict(self.kind_tools[kind].most_common()), "example_runs": ids[:5],
                "major": share >= MIN_SHARE and len(ids) >= MIN_RUNS,
                "covered_by": self.coverage.get(kind, []),
            })
        return rows

    def uncovered(self) -> list[str]:
        """The major kinds (share >= 0.15 of the failed runs, at least 5 runs) no kept capability teaches."""
        return [r["kind"] for r in self.table() if r["major"] and not r["covered_by"]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs_with_expected_actions": self.runs_with_gt,
            "failed_with_expected_actions": self.failed_with_gt,
            "missing_write_instead": dict(self.instead.most_common()),
            "table": self.table(),
            "uncovered": self.uncovered(),
            "runs": {rid: [d.model_dump(mode="json", exclude_none=True) for d in a.departures]
                     for rid, a in self.failed.items()},
        }


class DiagnosisCollector:
    """Accumulates a `Diagnosis` over the runs as they are labelled; holds at most `keep` failed runs' attributions."""

    def __init__(self, keep: int = 2000) -> None:
        self.diagnosis = Diagnosis()
        self.keep = keep

    def __call__(self, view: RunView) -> None:
        a = view.attribution
        if a is None:
            return
        d = self.diagnosis
        d.runs_with_gt += 1
        if a.success:
            return
        d.failed_with_gt += 1
        for kind in a.kinds:
            d.kind_runs[kind].append(a.run_id)
        for dep in a.departures:
            if dep.tool:
                d.kind_tools[dep.kind][dep.tool] += 1
            if dep.instead:
                d.instead[dep.instead] += 1
        if len(d.failed) < self.keep:
            d.failed[a.run_id] = a


def cover(diagnosis: Diagnosis, kept: list[Any], labels: np.ndarray, run_ids: list[str], kept_cols: list[int]) -> None:
    """Fill `diagnosis.coverage`: for each kind, the kept capabilities (candidates `kept`, label columns `kept_cols`)
    whose family teaches the kind and that label LACKING at least one failed run showing it."""
    row_of = {rid: i for i, rid in enumerate(run_ids)}
    out: dict[str, list[str]] = {}
    for kind, ids in diagnosis.kind_runs.items():
        rows = [row_of[r] for r in ids if r in row_of]
        names = []
        for cand, col in zip(kept, kept_cols):
            if kind in get_detector(cand.detector).teaches and rows and (labels[rows, col] == LACKING).any():
                names.append(cand.name)
        out[kind] = names
    diagnosis.coverage = out


def restates_outcome(column: np.ndarray, failed: np.ndarray) -> bool:
    """True when a candidate's labels are the outcome itself: it applies to most runs, and on at least 95% of them
    LACKING goes with a failure and PRESENT with a pass (a check that restates the benchmark's reward)."""
    applies = column != 0
    if applies.sum() < max(10, 0.5 * len(column)):
        return False
    agree = ((column == LACKING) & failed) | ((column == PRESENT) & ~failed)
    return bool(agree[applies].mean() >= RESTATES_AGREEMENT)
