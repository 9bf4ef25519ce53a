"""Label every (run, candidate) pair PRESENT / LACKING / NA.

A `Candidate` is a proposed `CapabilitySpec` plus how to label a real run with it: by its detector's labeler (`family`,
with `args` telling the labeler what the candidate is about; see `trace_envs.mining.detector`) or by the LLM labeler
(`llm`, see `trace_envs.mining.llm`).

Labels are coded as int8 for the selection matrix: PRESENT = 1, LACKING = -1, NA = 0. Nothing here executes text.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal

import numpy as np

from trace_envs.checks.clauses import Check
from trace_envs.checks.run_view import RunView
from trace_envs.mining.detector import detector_for, get_detector
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.models import Run

PRESENT, LACKING, NA = 1, -1, 0
CODES = {"PRESENT": PRESENT, "LACKING": LACKING, "NA": NA}
NAMES = {v: k for k, v in CODES.items()}


@dataclass
class Candidate:
    """A proposed capability and the way real runs are labelled with it."""

    spec: CapabilitySpec
    labeler: Literal["family", "llm"] = "family"
    args: dict[str, Any] = field(default_factory=dict)
    origin: str = "offline"
    detector: str = ""  # the detector that proposed it (default: the family's own)

    def __post_init__(self) -> None:
        if not self.detector:
            self.detector = detector_for(self.spec.family).name

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def check(self) -> Check:
        return self.spec.label_check or self.spec.check

    def target_tools(self) -> list[str]:
        """The tools the capability is about (its family says which); an all-writes completion names every write."""
        if "tool" in self.args and self.args["tool"] is None:
            return sorted(t.name for t in self.spec.tools if t.kind == "write") or self.role_tools()
        return get_detector(self.detector).target_tools(self.spec.roles) or self.role_tools()

    def role_tools(self) -> list[str]:
        """The tools the candidate is about (its roles, without argument names), for mapping and dedup."""
        tools = {t.name for t in self.spec.tools}
        out = [v for k, v in sorted(self.spec.roles.items()) if k not in ("key", "arg") and v in tools]
        return out or sorted(tools)


def label_view(cand: Candidate, view: RunView) -> str:
    """PRESENT / LACKING / NA of one prepared run for one candidate (family labelers only)."""
    if cand.labeler != "family":
        raise ValueError(f"candidate {cand.name!r} has labeler {cand.labeler!r}, which is not programmatic")
    return get_detector(cand.detector).label(view, cand.check, cand.args)


def _labeler(cand: Candidate) -> tuple[Callable[..., str], Check, dict[str, Any]] | Exception | None:
    """`label_view`'s labeler, check and arguments of a family candidate (None for an LLM-labelled one), or the error
    looking its detector up raised, which then marks each of its runs NA as a labeler's own error does."""
    if cand.labeler == "llm":
        return None
    try:
        if cand.labeler != "family":
            raise ValueError(f"candidate {cand.name!r} has labeler {cand.labeler!r}, which is not programmatic")
        return get_detector(cand.detector).label, cand.check, cand.args
    except Exception as exc:  # noqa: BLE001 - reported per candidate, as a labeler's error is
        return exc


def label_run(cand: Candidate, run: Run, tool_kinds: dict[str, str]) -> str:
    return label_view(cand, RunView(run, tool_kinds))


@dataclass
class LabelMatrix:
    """Labels of N runs x C candidates (int8: 1 PRESENT, -1 LACKING, 0 NA) with the runs' ids and outcomes."""

    labels: np.ndarray
    run_ids: list[str]
    task_ids: list[str]
    failed: np.ndarray
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return int(self.labels.shape[0])


def label_runs(
    runs: Iterable[Run],
    candidates: list[Candidate],
    tool_kinds: dict[str, str],
    *,
    llm_labeler: Callable[[Candidate, Run], str] | None = None,
    progress: Callable[[int], None] | None = None,
    on_view: Callable[[RunView], None] | None = None,
    attributions: dict[str, Any] | None = None,
) -> LabelMatrix:
    """Label every (run, candidate) pair; `runs` may be a generator (runs are not kept: constant memory per run).

    A labeler that raises marks that candidate's pair NA and records the first error per candidate. `on_view` sees
    each prepared run after it is labelled (the miner's diagnosis reads its attribution there, computed once);
    `attributions` are ones already computed, by run id (the proposer's), used instead of computing them again.
    """
    rows: list[array] = []
    run_ids: list[str] = []
    task_ids: list[str] = []
    failed: list[bool] = []
    errors: dict[str, str] = {}
    c = len(candidates)
    # each family candidate's labeler and check, looked up once rather than per run
    labelers = [_labeler(cand) for cand in candidates]
    for run in runs:
        view = RunView(run, tool_kinds)
        if attributions is not None and run.run_id in attributions:
            view.attribution = attributions.pop(run.run_id)
        row = array("b", bytes(c))  # a compact row; numpy's per-element assignment cost more than the labelling loop
        for j, cand in enumerate(candidates):
            try:
                if cand.labeler == "llm":
                    lab = llm_labeler(cand, run) if llm_labeler else "NA"
                elif isinstance(labelers[j], Exception):
                    raise labelers[j]
                else:
                    label, check, args = labelers[j]
                    lab = label(view, check, args)
            except Exception as exc:  # a bad candidate must not stop mining
                errors.setdefault(cand.name, f"{type(exc).__name__}: {exc}")
                lab = "NA"
            row[j] = CODES.get(lab, NA)
        if on_view is not None:
            on_view(view)
        rows.append(row)
        run_ids.append(run.run_id)
        task_ids.append(run.task_id)
        failed.append(not run.success)
        if progress:
            progress(1)
    labels = (np.frombuffer(b"".join(r.tobytes() for r in rows), dtype=np.int8).reshape(len(rows), c).copy()
              if rows else np.zeros((0, c), dtype=np.int8))
    return LabelMatrix(labels=labels, run_ids=run_ids, task_ids=task_ids, failed=np.array(failed, dtype=bool),
                       errors=errors)


def spec_target_tools(spec: CapabilitySpec) -> list[str]:
    """The tools a capability is about, as its family's detector says (e.g. the read and the write of a precondition).
    Used to map a capability to a known deficit."""
    return detector_for(spec.family).target_tools(spec.roles)
