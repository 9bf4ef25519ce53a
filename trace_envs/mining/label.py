"""Label every (run, candidate) pair PRESENT / LACKING / NA.

A `Candidate` is a proposed `CapabilitySpec` plus how to label a real run with it:

- `check`: the spec's portable `label_check` through `Check.label(trace, ground_truth_steps)`;
- `exercised`: like `check`, but NA unless the run called `args["tool"]` (an order or confirmation that was never
  exercised says nothing about the capability: the missing write is another capability's failure);
- `completion`: a per-run `AllCompleted` check built from the run's ground truth (every expected call of
  `args["tool"]`, or of every write tool when it is None, with the expected arguments); NA without ground truth;
- `refusal`: NA when the ground truth expects `args["tool"]` (or there is no ground truth); else a `NoCall` check,
  LACKING when the tool was called, PRESENT when the user asked for that kind of action and it was not (else NA);
- `arith`: the numeric argument `args["arg"]` of `args["tool"]` equals the ground truth's value (within 0.01);
- `llm`: labelled by the LLM labeler (see `trace_envs.mining.llm`), not here.

Labels are coded as int8 for the selection matrix: PRESENT = 1, LACKING = -1, NA = 0. Nothing here executes text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from trace_envs.checks.clauses import AllCompleted, CallRef, Check, NoCall
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.models import Run

PRESENT, LACKING, NA = 1, -1, 0
CODES = {"PRESENT": PRESENT, "LACKING": LACKING, "NA": NA}
NAMES = {v: k for k, v in CODES.items()}

LABELERS = ("check", "exercised", "completion", "refusal", "arith", "llm")


@dataclass
class Candidate:
    """A proposed capability and the way real runs are labelled with it."""

    spec: CapabilitySpec
    labeler: str = "check"
    args: dict[str, Any] = field(default_factory=dict)
    origin: str = "offline"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def check(self) -> Check:
        return self.spec.label_check or self.spec.check

    def target_tools(self) -> list[str]:
        """The tools the capability is about (see `spec_target_tools`); an all-writes completion names every write."""
        if self.labeler == "completion" and self.args.get("tool") is None:
            return sorted(t.name for t in self.spec.tools if t.kind == "write") or self.role_tools()
        return spec_target_tools(self.spec) or self.role_tools()

    def role_tools(self) -> list[str]:
        """The tools the candidate is about (its roles, without argument names), for mapping and dedup."""
        tools = {t.name for t in self.spec.tools}
        out = [v for k, v in sorted(self.spec.roles.items()) if k not in ("key", "arg") and v in tools]
        return out or sorted(tools)


class RunView:
    """A run prepared once for labeling with many candidates: its trace, ground truth steps and call names."""

    __slots__ = ("run", "trace", "gt_steps", "gt_names", "called", "kinds", "_user_text")

    def __init__(self, run: Run, tool_kinds: dict[str, str]) -> None:
        self.run = run
        self.kinds = tool_kinds
        self.trace = ActionTrace.from_run(run, tool_kinds)
        gt = [g for g in run.ground_truth or [] if g.requestor == "agent"] if run.ground_truth is not None else None
        self.gt_steps = (
            [TraceStep(kind="call", name=g.name, arguments=g.arguments) for g in gt] if gt is not None else None
        )
        self.gt_names = {g.name for g in gt} if gt is not None else None
        self.called = {s.name for s in self.trace.steps if s.kind == "call"}
        self._user_text: str | None = None

    def user_text(self) -> str:
        if self._user_text is None:
            self._user_text = "\n".join(s.text or "" for s in self.trace.steps if s.kind == "user").lower()
        return self._user_text


def _completion(view: RunView, tool: str | None) -> str:
    if view.gt_steps is None:
        return "NA"
    if tool is None:
        expected = [s for s in view.gt_steps if view.kinds.get(s.name or "") == "write"]
    else:
        expected = [s for s in view.gt_steps if s.name == tool]
    if not expected:
        return "NA"
    refs = [CallRef(tool=s.name, args=dict(s.arguments)) for s in expected[:50]]
    check = Check(clauses=[AllCompleted(id="all_expected", calls=refs)])
    return "PRESENT" if check.evaluate(view.trace).passed else "LACKING"


VERB_SYNONYMS = {
    "update": ("update", "change", "modify"),
    "modify": ("modify", "change", "update"),
    "book": ("book", "reserve", "reservation"),
    "cancel": ("cancel",),
    "refund": ("refund",),
    "exchange": ("exchange", "swap"),
    "return": ("return",),
    "send": ("send", "compensat", "certificate"),
}


def request_verbs(tool: str) -> tuple[str, ...]:
    """Words a user asking for `tool`'s action would likely use (its leading verb and a few synonyms)."""
    head = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).lower())[0]
    return VERB_SYNONYMS.get(head, (head,))


def _refusal(view: RunView, tool: str) -> str:
    """NA when the ground truth calls for `tool`; LACKING when the agent called it anyway; PRESENT when the user asked
    for that kind of action (the tool's verb in a user message) and the agent did not call it; else NA."""
    if view.gt_names is None or tool in view.gt_names:
        return "NA"
    check = Check(clauses=[NoCall(id="no_unrequested", call=CallRef(tool=tool))])
    if not check.evaluate(view.trace).passed:
        return "LACKING"
    text = view.user_text()
    return "PRESENT" if any(v in text for v in request_verbs(tool)) else "NA"


def _arith(view: RunView, tool: str, arg: str) -> str:
    if view.gt_steps is None or tool not in view.called:
        return "NA"
    want = [s.arguments[arg] for s in view.gt_steps if s.name == tool and isinstance(s.arguments.get(arg), (int, float))
            and not isinstance(s.arguments.get(arg), bool)]
    if not want:
        return "NA"
    refs = [CallRef(tool=tool, args={arg: {"$approx": w, "$tol": 0.01}}) for w in want]
    check = Check(clauses=[AllCompleted(id="values_right", calls=refs)])
    return "PRESENT" if check.evaluate(view.trace).passed else "LACKING"


def label_view(cand: Candidate, view: RunView) -> str:
    """PRESENT / LACKING / NA of one prepared run for one candidate (programmatic labelers only)."""
    kind = cand.labeler
    if kind == "check":
        return cand.check.label(view.trace, view.gt_steps)
    if kind == "exercised":
        tool = cand.args.get("tool")
        if tool not in view.called:
            return "NA"
        return "PRESENT" if cand.check.evaluate(view.trace).passed else "LACKING"
    if kind == "completion":
        return _completion(view, cand.args.get("tool"))
    if kind == "refusal":
        return _refusal(view, cand.args["tool"])
    if kind == "arith":
        return _arith(view, cand.args["tool"], cand.args["arg"])
    raise ValueError(f"candidate {cand.name!r} has labeler {kind!r}, which is not programmatic")


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
) -> LabelMatrix:
    """Label every (run, candidate) pair; `runs` may be a generator (runs are not kept: constant memory per run).

    A labeler that raises marks that candidate's pair NA and records the first error per candidate.
    """
    rows: list[np.ndarray] = []
    run_ids: list[str] = []
    task_ids: list[str] = []
    failed: list[bool] = []
    errors: dict[str, str] = {}
    c = len(candidates)
    for run in runs:
        view = RunView(run, tool_kinds)
        row = np.zeros(c, dtype=np.int8)
        for j, cand in enumerate(candidates):
            try:
                if cand.labeler == "llm":
                    lab = llm_labeler(cand, run) if llm_labeler else "NA"
                else:
                    lab = label_view(cand, view)
            except Exception as exc:  # a bad candidate must not stop mining
                errors.setdefault(cand.name, f"{type(exc).__name__}: {exc}")
                lab = "NA"
            row[j] = CODES.get(lab, NA)
        rows.append(row)
        run_ids.append(run.run_id)
        task_ids.append(run.task_id)
        failed.append(not run.success)
        if progress:
            progress(1)
    labels = np.vstack(rows) if rows else np.zeros((0, c), dtype=np.int8)
    return LabelMatrix(labels=labels, run_ids=run_ids, task_ids=task_ids, failed=np.array(failed, dtype=bool),
                       errors=errors)


def spec_target_tools(spec: CapabilitySpec) -> list[str]:
    """The tools a capability is about, by family: (read, write) for a precondition, the read for information
    gathering, the handoff tool for a handoff, else the write. Used to map a capability to a known deficit."""
    r, fam = spec.roles, spec.family
    if fam == "precondition_before_write":
        keys: tuple[str, ...] = ("read", "write")
    elif fam == "information_gathering":
        keys = ("read",)
    elif fam == "handoff_to_human":
        keys = ("handoff",)
    elif fam == "aggregation_arithmetic":
        keys = ("write",) if "write" in r else ("read",)
    else:
        keys = ("write",)
    return [r[k] for k in keys if r.get(k)]
