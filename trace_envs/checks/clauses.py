"""Declarative, weighted predicates over an `ActionTrace`.

A `Check` is data (it lives in a CapabilitySpec's JSON). Each clause scores a trace in [0, 1]; a clause whose
`requires` are not all fully met scores 0 (so "no forbidden call" cannot be earned by doing nothing); the check's score
is the weighted mean. The same evaluation labels a real run PRESENT / LACKING / NA for the miner.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trace_envs.checks.matching import matches, resolve, text_mentions
from trace_envs.checks.trace import ActionTrace, TraceStep

ClauseId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]

DEFAULT_ASK = (
    r"(?i)\b(confirm|confirmation|proceed|shall i|should i|would you like me to|do you want me to|"
    r"is that (correct|right|ok)|go ahead|are you sure|ok to)\b"
)
DEFAULT_YES = r"(?i)\b(yes|yeah|yep|yup|confirm(ed)?|go ahead|proceed|sure|please do|correct|that's right|ok(ay)?)\b"


class CallRef(BaseModel):
    """Which tool calls a clause is about: by tool name or by kind, optionally with argument matchers."""

    model_config = ConfigDict(extra="forbid")

    tool: str | None = Field(default=None, description="Tool name; None matches any tool (filtered by `kind`).")
    kind: Literal["read", "write", "other"] | None = Field(default=None, description="Tool kind to match.")
    args: dict[str, Any] = Field(default_factory=dict, description="Argument matchers (see checks.matching).")
    match: Literal["subset", "exact"] = Field(
        default="subset", description="subset: the listed arguments match, others may be present; exact: same keys."
    )

    @model_validator(mode="after")
    def _names_something(self) -> "CallRef":
        if self.tool is None and self.kind is None:
            raise ValueError("a call reference needs `tool` or `kind`")
        return self

    def hits(self, step: TraceStep, trace: ActionTrace, bindings: dict[str, Any]) -> bool:
        if step.kind != "call":
            return False
        if self.tool is not None and step.name != self.tool:
            return False
        if self.kind is not None and trace.kind_of(step.name) != self.kind:
            return False
        if self.match == "exact" and set(self.args) != set(step.arguments):
            return False
        return all(k in step.arguments and matches(m, step.arguments[k], bindings) for k, m in self.args.items())

    def describe(self) -> str:
        head = self.tool or f"any {self.kind} tool"
        return f"{head}({', '.join(self.args)})" if self.args else head


class _Clause(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: ClauseId
    weight: float = Field(default=1.0, ge=0.0, le=100.0)
    requires: list[ClauseId] = Field(default_factory=list, description="Clauses that must score 1.0 first.")
    when: str | None = Field(
        default=None,
        pattern=r"^!?[a-z][a-z0-9_]{0,63}$",
        description="Binding that switches the clause on (`name`) or off (`!name`); unset: always on.",
    )
    description: str = Field(default="", max_length=2000)

    def active(self, bindings: dict[str, Any]) -> bool:
        if self.when is None:
            return True
        negate = self.when.startswith("!")
        value = bool(bindings.get(self.when.lstrip("!"), False))
        return not value if negate else value


class CallMade(_Clause):
    """A matching call happened (at least `min_count` times)."""

    type: Literal["call_made"] = "call_made"
    call: CallRef
    min_count: int = Field(default=1, ge=1, le=100)

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        n = sum(1 for s in trace.calls if self.call.hits(s, trace, b))
        return min(1.0, n / self.min_count)


class Order(_Clause):
    """Before the first call matching `then`, a call matching `first` happened (sharing the `join` arguments).

    Scores 0 when no `then` call happened: an order that was never exercised earns nothing.
    """

    type: Literal["order"] = "order"
    first: CallRef
    then: CallRef
    join: list[str] = Field(default_factory=list, description="Arguments that must be equal in both calls.")

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        steps = trace.calls
        for i, step in enumerate(steps):
            if self.then.hits(step, trace, b):
                return 1.0 if any(self._joined(p, step) and self.first.hits(p, trace, b) for p in steps[:i]) else 0.0
        return 0.0

    def _joined(self, before: TraceStep, after: TraceStep) -> bool:
        return all(k in before.arguments and before.arguments.get(k) == after.arguments.get(k) for k in self.join)

    def exercised(self, trace: ActionTrace, b: dict[str, Any]) -> bool:
        return any(self.then.hits(s, trace, b) for s in trace.calls)


class NoCall(_Clause):
    """No call matches `call` (a forbidden tool, kind or argument pattern)."""

    type: Literal["no_call"] = "no_call"
    call: CallRef

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        return 0.0 if any(self.call.hits(s, trace, b) for s in trace.calls) else 1.0


class Confirmation(_Clause):
    """Each call matching `call` (a write) is preceded, since the previous such call, by an agent message asking for
    confirmation and then a user message agreeing. Partial credit: the share of confirmed writes; 0 with no write."""

    type: Literal["confirmation"] = "confirmation"
    call: CallRef
    ask_pattern: str = Field(default=DEFAULT_ASK, max_length=500)
    yes_pattern: str = Field(default=DEFAULT_YES, max_length=500)

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        ask, yes = re.compile(self.ask_pattern), re.compile(self.yes_pattern)
        writes = confirmed = 0
        asked = agreed = False
        for step in trace.steps:
            if step.kind == "say" and step.text and ask.search(step.text[:10_000]):
                asked, agreed = True, False
            elif step.kind == "user" and step.text and asked and yes.search(step.text[:10_000]):
                agreed = True
            elif step.kind == "call" and self.call.hits(step, trace, b):
                writes += 1
                confirmed += int(asked and agreed)
                asked = agreed = False
        return confirmed / writes if writes else 0.0

    def exercised(self, trace: ActionTrace, b: dict[str, Any]) -> bool:
        return any(self.call.hits(s, trace, b) for s in trace.calls)


class AllCompleted(_Clause):
    """Every listed call happened, each matched by a distinct call. Partial credit: the share completed."""

    type: Literal["all_completed"] = "all_completed"
    calls: list[CallRef] = Field(min_length=1, max_length=50)

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        used: set[int] = set()
        done = 0
        for ref in self.calls:
            for i, step in enumerate(trace.calls):
                if i not in used and ref.hits(step, trace, b):
                    used.add(i)
                    done += 1
                    break
        return done / len(self.calls)


class Grounded(_Clause):
    """Every call matching `call` passes, in each of `args`, a value that appeared before it in a user message or a
    tool result (not invented). Partial credit: the share of grounded calls; 0 when no such call happened."""

    type: Literal["grounded"] = "grounded"
    call: CallRef
    args: list[str] = Field(min_length=1, max_length=20)

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        seen: list[str] = []
        total = grounded = 0
        for step in trace.steps:
            if step.kind == "call" and self.call.hits(step, trace, b):
                total += 1
                grounded += int(all(_appeared(step.arguments.get(a), seen) for a in self.args))
            if step.kind == "user" and step.text:
                seen.append(step.text)
            elif step.kind == "call" and step.result is not None and not step.error:
                seen.append(step.result if isinstance(step.result, str) else json.dumps(step.result))
        return grounded / total if total else 0.0


def _appeared(value: Any, seen: list[str]) -> bool:
    """Every leaf of `value` stands as a whole token (a word, an id, a number) in some earlier text."""
    if value is None:
        return False
    leaves = _leaves(value)
    return bool(leaves) and all(any(text_mentions(leaf, text) for text in seen) for leaf in leaves)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, bool) or value is None:
        return []
    return [value]


class Communicated(_Clause):
    """The agent told the user each value (case-insensitive text; numbers in any common format).

    `mode: all` gives the share of values communicated; `any` gives 1 when one of them was. With `after`, only agent
    messages after the last call matching it count (an answer given before the data was read earns nothing)."""

    type: Literal["communicated"] = "communicated"
    values: list[Any] = Field(min_length=1, max_length=50)
    mode: Literal["all", "any"] = "all"
    after: CallRef | None = None

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        steps = trace.steps
        if self.after is not None:
            last = max((i for i, s in enumerate(steps) if self.after.hits(s, trace, b)), default=None)
            if last is None:
                return 0.0
            steps = steps[last + 1 :]
        said = "\n".join(s.text or "" for s in steps if s.kind == "say")
        found = [text_mentions(resolve(v, b), said) for v in self.values]
        if self.mode == "any":
            return 1.0 if any(found) else 0.0
        return sum(found) / len(found)


class FinalState(_Clause):
    """A condition on the episode's final scenario state, at a dotted `path` (segments may be `$var`)."""

    type: Literal["final_state"] = "final_state"
    path: str = Field(min_length=1, max_length=500)
    op: Literal["eq", "ne", "in", "not_in", "exists", "absent"] = "eq"
    value: Any = None

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        found, got = _lookup(trace.final_state, self.path, b)
        if self.op == "exists":
            return float(found)
        if self.op == "absent":
            return float(not found)
        if not found:
            return 0.0
        want = resolve(self.value, b)
        if self.op == "eq":
            return float(matches(want, got, b))
        if self.op == "ne":
            return float(not matches(want, got, b))
        options = want if isinstance(want, list) else [want]
        inside = any(matches(o, got, b) for o in options)
        return float(inside if self.op == "in" else not inside)


def _lookup(state: Any, path: str, b: dict[str, Any]) -> tuple[bool, Any]:
    node = state
    for raw in path.split("."):
        key = str(resolve({"$var": raw[1:]}, b)) if raw.startswith("$") else raw
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return False, None
    return True, node


Clause = Annotated[
    Union[CallMade, Order, NoCall, Confirmation, AllCompleted, Grounded, Communicated, FinalState],
    Field(discriminator="type"),
]

Label = Literal["PRESENT", "LACKING", "NA"]


class CheckResult(BaseModel):
    score: float
    breakdown: dict[str, float]
    passed: bool


class Check(BaseModel):
    """Weighted clauses with partial credit; `applies_if` says when a real run is relevant at all (for labeling)."""

    model_config = ConfigDict(extra="forbid")

    clauses: list[Clause] = Field(min_length=1, max_length=50)
    applies_if: list[CallRef] = Field(
        default_factory=list,
        description="A run is NA for this check unless one of these calls appears in it or in its ground truth.",
    )

    @model_validator(mode="after")
    def _requires_known(self) -> "Check":
        ids = [c.id for c in self.clauses]
        if len(set(ids)) != len(ids):
            raise ValueError(f"clause ids must be unique, got {ids}")
        seen: set[str] = set()
        for clause in self.clauses:
            missing = [r for r in clause.requires if r not in seen]
            if missing:
                raise ValueError(f"clause {clause.id!r} requires {missing}, which are not earlier clauses")
            seen.add(clause.id)
        if sum(c.weight for c in self.clauses) <= 0:
            raise ValueError("clause weights must not all be zero")
        return self

    def evaluate(self, trace: ActionTrace, bindings: dict[str, Any] | None = None) -> CheckResult:
        b = bindings or {}
        effective: dict[str, float] = {}
        active = [c for c in self.clauses if c.active(b)]
        for clause in active:
            raw = max(0.0, min(1.0, float(clause.score(trace, b))))
            gated = all(effective.get(r, 1.0) >= 1.0 for r in clause.requires)
            effective[clause.id] = raw if gated else 0.0
        total = sum(c.weight for c in active)
        if total <= 0:
            raise ValueError("no clause of this check is active for these bindings")
        score = sum(c.weight * effective[c.id] for c in active) / total
        score = max(0.0, min(1.0, score))
        return CheckResult(score=score, breakdown=effective, passed=score >= 1.0 - 1e-9)

    def applies(self, trace: ActionTrace, ground_truth: list[TraceStep] | None = None, bindings=None) -> bool:
        if not self.applies_if:
            return True
        b = bindings or {}
        pool = trace.calls + list(ground_truth or [])
        return any(ref.hits(s, trace, b) for ref in self.applies_if for s in pool)

    def label(self, trace: ActionTrace, ground_truth: list[TraceStep] | None = None, bindings=None) -> Label:
        """PRESENT when the run exercises the capability fully, LACKING when it applies but is not met, else NA."""
        if not self.applies(trace, ground_truth, bindings):
            return "NA"
        return "PRESENT" if self.evaluate(trace, bindings).passed else "LACKING"
