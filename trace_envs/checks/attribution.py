"""Failure attribution: where a run departs from the actions its source expects, and of what kind.

A source that carries expected actions (tau-bench `info.task.actions`, tau2 `evaluation_criteria.actions`) says what a
correct run does. Diffing a run's successful state-changing calls against them names *why* it failed, which the
outcome alone cannot:

- `missing_write`: an expected write was never made; `instead` says what the agent did (made another write,
  transferred, refused with a reason as `language.refusals` reads one, the call failed, or it stopped);
- a write on the right tool with an argument that differs, typed by where the values were, in this order:
  `wrong_number` (both numbers: an amount or a count computed wrong), `user_claim` (the agent used a value the user
  stated where the records held the expected one), `invented_value` (the agent's value appears nowhere it saw),
  `other_option` (the expected value was listed in an earlier tool result: another option was picked), `other_value`;
- `unwarranted_write`: a write the ground truth does not make;
- `order`: the expected writes all made, in another order;
- `user_action_missing`: a user-side action the expected actions include that the user never performed;
- `said`: the writes match and the run still failed: the failure is in what was said.

Reads are not compared (a different read is not a failure by itself), nor are tools whose every argument is prose
(`think`, `calculate`). Pure functions of a run; nothing here executes text.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, Field

from trace_envs.language.refusals import refuses_with_reason
from trace_envs.checks.trace import read_result
from trace_envs.trajectories.handoff import is_handoff
from trace_envs.trajectories.models import PROSE_ARGS, GroundTruthAction, Run, ToolCall

DepartureKind = Literal[
    "missing_write", "wrong_number", "user_claim", "other_option", "invented_value", "other_value",
    "unwarranted_write", "missing_handoff", "unwarranted_handoff", "order", "user_action_missing", "said",
]
ARG_KINDS = ("wrong_number", "user_claim", "other_option", "invented_value", "other_value")
KINDS: tuple[str, ...] = ("missing_write", *ARG_KINDS, "unwarranted_write", "missing_handoff", "unwarranted_handoff",
                          "order", "user_action_missing", "said")
KIND_TEXT = {
    "missing_write": "an expected write never made",
    "wrong_number": "the right tool with a wrong number (amount, count)",
    "user_claim": "the right tool with a value the user stated where the records say otherwise",
    "other_option": "the right tool with another option an earlier tool result listed",
    "invented_value": "the right tool with a value the agent never saw (invented)",
    "other_value": "the right tool with another value (not listed, not a number)",
    "unwarranted_write": "a write the ground truth does not make",
    "missing_handoff": "an expected transfer to a human never made",
    "unwarranted_handoff": "a transfer to a human the ground truth does not make",
    "order": "the expected writes made in another order",
    "user_action_missing": "a user-side action the user never performed",
    "said": "the writes match: the failure is in what was said",
}
Instead = Literal["other_write", "transferred", "refused", "call_failed", "stopped"]
MAX_EVIDENCE = 300
# `Run.meta["expected"]` of a run whose source carries no expected actions (see `trace_envs.mining.expected`): taken
# from its own task's passed runs (only the arguments they agree on are expected), or borrowed, by tool name only,
# from a similar task's.
INFERRED = "inferred"
BORROWED = "inferred from a similar task"
FREE_TEXT_ARGS = PROSE_ARGS


class Departure(BaseModel):
    """One way a run departs from its expected actions, with the evidence: the two calls side by side."""

    kind: DepartureKind
    tool: str | None = None
    arg: str | None = Field(default=None, description="The argument that differs (argument kinds only).")
    expected: dict[str, Any] | None = Field(default=None, description="The expected call: {name, arguments}.")
    actual: dict[str, Any] | None = Field(default=None, description="The agent's call: {name, arguments}.")
    expected_value: Any = None
    actual_value: Any = None
    instead: Instead | None = Field(default=None, description="For a missing write: what the agent did instead.")
    call: int | None = Field(default=None, description="Position in `Run.tool_calls` of the agent's call.")
    evidence: str = Field(default="", description="Where the values were (which tool result, the user's words).")


class Attribution(BaseModel):
    """A run's departures from its expected actions; `departures` is empty for a run that matches them."""

    run_id: str
    task_id: str
    success: bool
    departures: list[Departure] = Field(default_factory=list)
    matched: list[int] = Field(default_factory=list,
                               description="Positions in `Run.tool_calls` of the writes that match an expected one.")

    def verdicts(self) -> dict[int, bool]:
        """Call position -> True for a write the expected actions make, False for one they do not make."""
        out = {i: True for i in self.matched}
        out.update({d.call: False for d in self.departures if d.kind == "unwarranted_write" and d.call is not None})
        return out

    @property
    def kinds(self) -> set[str]:
        return {d.kind for d in self.departures}

    def of(self, kind: str, tool: str | None = None, arg: str | None = None) -> list[Departure]:
        """The departures of `kind` (on `tool`, and `arg`, when given)."""
        return [d for d in self.departures
                if d.kind == kind and (tool is None or d.tool == tool) and (arg is None or d.arg == arg)]


def state_changing(name: str, arguments: dict[str, Any], kinds: Mapping[str, str]) -> bool:
    """A call that changes what the benchmark grades: a write or a hand-off to a person, not a read nor a prose-only
    tool. `kinds`: the profile's (`DomainProfile.kinds`), which know the domain's hand-offs."""
    kind = kinds.get(name, "other")
    if kind == "read":
        return False
    if kind == "write" or is_handoff(name, kinds):
        return True
    return bool(arguments) and not all(k in FREE_TEXT_ARGS for k in arguments)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def leaves(value: Any, depth: int = 0) -> list[Any]:
    """The scalar leaves of a value (dict values, list items), as the benchmark's arguments nest them."""
    if depth > 6:
        return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in leaves(v, depth + 1)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v, depth + 1)]
    return [] if value is None else [value]


def _is_number(v: Any) -> bool:
    """A JSON number: a string of digits is an id (an item, an order), never an amount."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Seen:
    """What the agent had seen up to a point of the run: tool results (their leaves and text) and the user's words.
    Parsed on first use: most runs have no argument departure to explain."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._results: list[tuple[int, str, set[str], str]] | None = None
        self._user: list[tuple[int, str]] | None = None

    @property
    def results(self) -> list[tuple[int, str, set[str], str]]:
        """(message index, tool, leaf strings, lower-cased text) of every successful result, in order."""
        if self._results is None:
            self._results = []
            for c in self.run.tool_calls:
                if c.result is None or c.error:
                    continue
                data = read_result(c.result)
                self._results.append((c.message_index, c.name, {str(x) for x in leaves(data)}, c.result.lower()))
        return self._results

    @property
    def user(self) -> list[tuple[int, str]]:
        if self._user is None:
            self._user = [(i, m["content"].lower()) for i, m in enumerate(self.run.messages)
                          if m.get("role") == "user" and isinstance(m.get("content"), str)]
        return self._user

    def in_results(self, value: Any, before: int) -> str | None:
        """The tool whose result, before message `before`, holds `value` (as a leaf, or a word of its text)."""
        s = str(value)
        for idx, tool, leaf_set, raw in self.results:
            if idx >= before:
                break
            if s in leaf_set or (isinstance(value, str) and len(s) >= 3 and s.lower() in raw):
                return tool
        return None

    def in_user(self, value: Any, before: int) -> bool:
        s = str(value).lower()
        return len(s) >= 2 and any(s in text for idx, text in self.user if idx < before)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _short(value: Any) -> Any:
    text = _canon(value)
    return value if len(text) <= MAX_EVIDENCE else text[:MAX_EVIDENCE] + "..."


def _arg_departure(g: GroundTruthAction, c: ToolCall, arg: str, seen: _Seen) -> Departure:
    want, got = g.arguments.get(arg), c.arguments.get(arg)
    w_leaves, g_leaves = Counter(map(_canon, leaves(want))), Counter(map(_canon, leaves(got)))
    exp_only = [json.loads(x) for x in (w_leaves - g_leaves).elements()]
    act_only = [json.loads(x) for x in (g_leaves - w_leaves).elements()]
    before = c.message_index if c.message_index >= 0 else len(seen.run.messages)
    listed = {v: seen.in_results(v, before) for v in exp_only}
    act_seen = {v: seen.in_results(v, before) for v in act_only}
    base = dict(tool=g.name, arg=arg, expected=_call(g.name, g.arguments), actual=_call(c.name, c.arguments),
                expected_value=_short(want), actual_value=_short(got))
    if exp_only and act_only and any(_is_number(v) for v in exp_only) and any(_is_number(v) for v in act_only):
        return Departure(kind="wrong_number", **base,
                         evidence=f"expected {exp_only[0]!r}, the agent passed {act_only[0]!r}")
    told = [v for v in act_only if not act_seen[v] and seen.in_user(v, before)]
    if told and exp_only and any(listed.values()):
        where = next(t for t in listed.values() if t)
        return Departure(kind="user_claim", **base,
                         evidence=f"{told[0]!r} is what the user said; {where} showed {exp_only[0]!r}")
    if act_only and all(not act_seen[v] and not seen.in_user(v, before) for v in act_only):
        return Departure(kind="invented_value", **base,
                         evidence=f"{act_only[0]!r} appears in no tool result and no user message before the call")
    if exp_only and all(listed.values()):
        where = sorted({t for t in listed.values() if t})
        return Departure(kind="other_option", **base,
                         evidence=f"{exp_only[0]!r} was listed by {', '.join(where)} before the call; "
                                  f"the agent passed {(act_only or [None])[0]!r}")
    return Departure(kind="other_value", **base,
                     evidence=f"expected {exp_only[:3]!r}, the agent passed {act_only[:3]!r}")


def _agreement(g: GroundTruthAction, c: ToolCall) -> int:
    return sum(_canon(c.arguments.get(k)) == _canon(v) for k, v in g.arguments.items())


def _instead(run: Run, tool: str, unmatched: list[ToolCall], seen_calls: list[ToolCall], kinds: Mapping[str, str]
             ) -> Instead:
    if any(c.name == tool and c.error for c in seen_calls):
        return "call_failed"
    if any(is_handoff(c.name, kinds) for c in unmatched):
        return "transferred"
    if unmatched:
        return "other_write"
    said = (m.get("content") for m in run.messages if m.get("role") == "assistant" and isinstance(m.get("content"), str))
    return "refused" if any(refuses_with_reason(text) for text in said) else "stopped"


def attribute(run: Run, kinds: Mapping[str, str]) -> Attribution | None:
    """The run's departures from its expected actions; None when the source carries none for it. `kinds`: the
    profile's (`DomainProfile.kinds`): a plain mapping of kinds knows of no hand-off to a person. Expected actions
    inferred from passed runs (`Run.meta["expected"]`, see `trace_envs.mining.expected`) name only the arguments the
    passed runs agreed on: the others are free."""
    if run.ground_truth is None:
        return None
    partial = run.meta.get("expected") in (INFERRED, BORROWED)
    seen = _Seen(run)
    position = {id(c): i for i, c in enumerate(run.tool_calls)}
    expected = [g for g in run.ground_truth if g.requestor == "agent" and state_changing(g.name, g.arguments, kinds)]
    calls = [c for c in run.agent_calls if state_changing(c.name, c.arguments, kinds)]
    made = [c for c in calls if not c.error]
    out: list[Departure] = []
    # exact matches first, in order, so that a repeated write pairs with its own expected call
    open_calls = list(made)
    exact: list[tuple[int, int]] = []  # (expected index, position among the made calls)
    rest: list[tuple[int, GroundTruthAction]] = []
    for gi, g in enumerate(expected):
        hit = next((c for c in open_calls if c.name == g.name and _args_equal(g.arguments, c.arguments, partial)), None)
        if hit is None:
            rest.append((gi, g))
        else:
            exact.append((gi, made.index(hit)))
            open_calls.remove(hit)
    missing: list[GroundTruthAction] = []
    for _, g in rest:
        same = [c for c in open_calls if c.name == g.name]
        if not same:
            missing.append(g)
            continue
        c = max(same, key=lambda x: _agreement(g, x))
        open_calls.remove(c)
        args = sorted(set(g.arguments) if partial else set(g.arguments) | set(c.arguments))
        for arg in args:
            if arg in FREE_TEXT_ARGS or _canon(g.arguments.get(arg)) == _canon(c.arguments.get(arg)):
                continue
            out.append(_arg_departure(g, c, arg, seen).model_copy(update={"call": position[id(c)]}))
    for g in missing:
        if is_handoff(g.name, kinds):
            out.append(Departure(kind="missing_handoff", tool=g.name, expected=_call(g.name, g.arguments),
                                 evidence=f"the agent never called {g.name}"))
            continue
        out.append(Departure(kind="missing_write", tool=g.name, expected=_call(g.name, g.arguments),
                             instead=_instead(run, g.name, open_calls, calls, kinds),
                             evidence=f"no successful {g.name} call matches it"))
    for c in open_calls:
        kind = "unwarranted_handoff" if is_handoff(c.name, kinds) else "unwarranted_write"
        out.append(Departure(kind=kind, tool=c.name, actual=_call(c.name, c.arguments), call=position[id(c)],
                             evidence=f"the expected actions make no {c.name} call like it"))
    positions = [p for _, p in sorted(exact)]
    if not out and positions != sorted(positions):
        out.append(Departure(kind="order", evidence="expected order " + ", ".join(g.name for g in expected)))
    done = {(c.name, _canon(c.arguments)) for c in run.user_calls if not c.error}
    done_names = {c.name for c in run.user_calls if not c.error}
    for g in (g for g in run.ground_truth if g.requestor == "user"):
        if (g.name, _canon(g.arguments)) not in done and g.name not in done_names:
            out.append(Departure(kind="user_action_missing", tool=g.name, expected=_call(g.name, g.arguments),
                                 evidence=f"the user never called {g.name}"))
    if not out and not run.success:
        out.append(Departure(kind="said", evidence="every expected write was made with its arguments"))
    matched = sorted(position[id(made[p])] for _, p in exact)
    return Attribution(run_id=run.run_id, task_id=run.task_id, success=run.success, departures=out, matched=matched)


def _args_equal(want: dict[str, Any], got: dict[str, Any], partial: bool = False) -> bool:
    keys = (set(want) if partial else set(want) | set(got)) - FREE_TEXT_ARGS
    return all(_canon(want.get(k)) == _canon(got.get(k)) for k in keys)


def attribute_all(runs: Iterable[Run], kinds: Mapping[str, str]) -> dict[str, Attribution]:
    """Attribution of every run that carries expected actions, by run id."""
    out = {}
    for run in runs:
        a = attribute(run, kinds)
        if a is not None:
            out[run.run_id] = a
    return out


def departure_table(attributions: Iterable[Attribution]) -> list[dict[str, Any]]:
    """Per departure kind: the failed runs that show it (count and share of the failed runs with expected actions),
    and the tools it falls on; kinds no failed run shows are left out."""
    failed = [a for a in attributions if not a.success]
    rows = []
    for kind in KINDS:
        hit = [a for a in failed if kind in a.kinds]
        if not hit:
            continue
        tools = Counter(d.tool for a in hit for d in a.of(kind) if d.tool)
        rows.append({"kind": kind, "text": KIND_TEXT[kind], "runs": len(hit),
                     "share": round(len(hit) / len(failed), 3), "tools": dict(tools.most_common())})
    return rows
