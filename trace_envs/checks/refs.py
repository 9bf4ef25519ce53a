"""Which tool calls a clause is about (`CallRef`), and how calls and values read in a clause's reason."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trace_envs.checks.matching import is_operator, matches, regex_problems
from trace_envs.checks.trace import ActionTrace, TraceStep

# A value longer than this is cut in a reason: a reason is one line someone reads.
SHOWN_CHARS = 60


def succeeded(step: TraceStep) -> bool:
    """A tool call whose result is not an error: the only kind of call a positive clause counts."""
    return step.kind == "call" and not step.error


class CallRef(BaseModel):
    """Which tool calls a clause is about: by tool name or by kind, optionally with argument matchers."""

    model_config = ConfigDict(extra="forbid")

    tool: str | None = Field(default=None, description="Tool name; None matches any tool (filtered by `kind`).")
    kind: Literal["read", "write", "other"] | None = Field(default=None, description="Tool kind to match.")
    args: dict[str, Any] = Field(default_factory=dict, description="Argument matchers (see checks.matching).")
    match: Literal["subset", "exact"] = Field(
        default="subset", description="subset: the listed arguments match, others may be present; exact: same keys."
    )
    args_from: str | None = Field(
        default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$",
        description="Binding holding arguments (a dict of values or matchers) the call also passes: the call the "
                    "scenario expects whatever its argument names (a search for the user's own route and date, a "
                    "hand-off summary that names the record).")

    @model_validator(mode="after")
    def _names_something(self) -> "CallRef":
        if self.tool is None and self.kind is None:
            raise ValueError("a call reference needs `tool` or `kind`")
        return self

    @field_validator("args")
    @classmethod
    def _linear_time_patterns(cls, args: dict[str, Any]) -> dict[str, Any]:
        problems = regex_problems(args, "args")
        if problems:
            raise ValueError("; ".join(problems))
        return args

    def hits(self, step: TraceStep, trace: ActionTrace, bindings: dict[str, Any]) -> bool:
        """Whether `step` is a call this reference names (whatever its result: callers decide whether errors count)."""
        if step.kind != "call":
            return False
        if self.tool is not None and step.name != self.tool:
            return False
        if self.kind is not None and trace.kind_of(step.name) != self.kind:
            return False
        if self.match == "exact" and set(self.args) != set(step.arguments):
            return False
        if self.args_from is not None:
            expected = bindings.get(self.args_from)
            if not isinstance(expected, dict) or not all(
                    k in step.arguments and matches(v, step.arguments[k], bindings) for k, v in expected.items()):
                return False
        return all(k in step.arguments and matches(m, step.arguments[k], bindings) for k, m in self.args.items())

    def describe(self, bindings: dict[str, Any] | None = None) -> str:
        """The reference as a reader sees it, e.g. `cancel_reservation(reservation_id=QZ7Y2K)`: `$var`s resolved from
        `bindings` (shown as `$name` when unbound or without bindings), other matchers in words."""
        head = self.tool or f"any {self.kind} tool"
        shown = [f"{k}={show_matcher(m, bindings)}" for k, m in self.args.items()]
        if self.args_from is not None:
            expected = (bindings or {}).get(self.args_from)
            shown += ([f"{k}={show_matcher(v, bindings)}" for k, v in expected.items()] if isinstance(expected, dict)
                      else [f"${self.args_from}"])
        return f"{head}({', '.join(shown)})" if shown else head


def show_matcher(matcher: Any, bindings: dict[str, Any] | None) -> str:
    """An argument matcher in words: a value, `$name`, `/regex/`, `~12.5`, `one of [...]`, `any`, `not ...`."""
    if not is_operator(matcher):
        return show_arg(matcher)
    op = next(iter(matcher))
    inner = matcher[op]
    if op == "$var":
        return show_arg(bindings[inner]) if bindings is not None and inner in bindings else f"${inner}"
    if op == "$regex":
        return f"/{inner}/"
    if op == "$approx":
        return f"~{show_matcher(inner, bindings)}"
    if op == "$in":
        options = inner if isinstance(inner, list) else [inner]
        return "one of [" + ", ".join(show_matcher(o, bindings) for o in options) + "]"
    if op == "$any":
        return "any"
    if op == "$mentions":
        return f"a text naming {show_matcher(inner, bindings)}"
    return f"not {show_matcher(inner, bindings)}"


def show_arg(value: Any) -> str:
    """A value inside a call: strings bare (`QZ7Y2K`), the rest as JSON, cut to SHOWN_CHARS."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def show_value(value: Any) -> str:
    """A value in a sentence: strings quoted (`'economy'`), the rest as JSON, cut to SHOWN_CHARS."""
    return f"'{show_arg(value)}'" if isinstance(value, str) else show_arg(value)


def show_call(step: TraceStep, index: int) -> str:
    """A call of the trace as it happened, with its 1-based step number: `cancel_reservation(reservation_id=ABC123)
    at step 4`, noting an error result."""
    args = ", ".join(f"{k}={show_arg(v)}" for k, v in step.arguments.items())
    error = " (it returned an error)" if step.error else ""
    return f"{step.name}({args}) at step {index + 1}{error}"


def errored_note(refs: list[CallRef], trace: ActionTrace, bindings: dict[str, Any]) -> str:
    """" (N matching calls returned an error)" when calls that `refs` name failed, else ""."""
    n = sum(1 for s in trace.steps if s.kind == "call" and s.error and any(r.hits(s, trace, bindings) for r in refs))
    return f" ({n} matching call{'s' if n != 1 else ''} returned an error)" if n else ""
