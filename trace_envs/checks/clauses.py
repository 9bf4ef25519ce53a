"""Declarative, weighted predicates over an `ActionTrace`.

A `Check` is data (it lives in a CapabilitySpec's JSON). Each clause scores a trace in [0, 1] and says why in one
line. A clause whose `requires` are not all fully met scores 0 (so "no forbidden call" cannot be earned by doing
nothing). The check's score is the weighted mean of its active clauses, times the 0/1 score of each active penalty
clause (a `NoCall` with `penalty: true`, which carries no weight: breaking it zeroes the whole check). The same
evaluation labels a real run PRESENT / LACKING / NA for the miner.

A call whose result is an error never satisfies a positive clause: it is not a call made (CallMade, Order, AllCompleted,
Grounded), not a write to confirm (Confirmation), not an anchor (`after`). NoCall alone counts errored calls, since
trying a forbidden write is the behaviour it penalises.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from trace_envs.checks.asking import asks, describe_question, details_for, user_agrees, words_for
from trace_envs.checks.matching import matches, pattern_problem, regex_problems, resolve, values_equal
from trace_envs.checks.refs import CallRef, errored_note, show_arg, show_call, show_value, succeeded
from trace_envs.checks.statements import audit_messages, in_a_sentence
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.language.confirmations import DEFAULT_ASK, DEFAULT_YES
from trace_envs.language.values import scalar_leaves, text_mentions

__all__ = [
    "DEFAULT_ASK", "DEFAULT_YES", "AllCompleted", "ArgumentsBound", "Asked", "CallMade", "CallRef", "Check", "CheckResult", "Clause",
    "Communicated", "Confirmation", "FinalState", "Grounded", "Label", "NoCall", "Order",
]

ClauseId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
Assessment = tuple[float, str]

# Fields added after specs were published: left out of a dump while they hold their default, so that the JSON (and
# so the hash) of a spec written before them does not change.
_LATER_FIELDS = {"unless": [], "penalty": False, "action_words": None, "details": None, "after_failures": [], "about": None,
                 "state_arguments": False, "since": "last"}


def _verdict(score: float, partial: str, missing: str) -> Assessment:
    """A score with its reason: `met`, `partial: <partial>` or `not met: <missing>`."""
    if score >= 1.0:
        return 1.0, "met"
    return (score, f"partial: {partial}") if score > 0 else (0.0, f"not met: {missing}")


def _last_success(ref: CallRef, trace: ActionTrace, b: dict[str, Any]) -> int | None:
    return max((i for i, s in enumerate(trace.steps) if succeeded(s) and ref.hits(s, trace, b)), default=None)


def _window(after: CallRef | None, trace: ActionTrace, b: dict[str, Any], first: bool = False) -> tuple[int, str, str]:
    """The steps an `after` anchor opens: (first step index, " after <call>" for reasons, "" or why it never opened:
    no successful call of the anchor). From its last successful call, or with `first` its first."""
    if after is None:
        return 0, "", ""
    last = _last_success(after, trace, b)
    if first and last is not None:
        last = min(i for i, s in enumerate(trace.steps) if succeeded(s) and after.hits(s, trace, b))
    if last is None:
        return 0, "", f"not met: {_no_call(after, trace, b)}"
    return last + 1, f" after {after.describe(b)}", ""


def _no_call(ref: CallRef, trace: ActionTrace, b: dict[str, Any]) -> str:
    return f"no successful call of {ref.describe(b)}{errored_note([ref], trace, b)}"


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

    @model_serializer(mode="wrap")
    def _omit_later_defaults(self, handler) -> dict[str, Any]:
        data = handler(self)
        for key, default in _LATER_FIELDS.items():
            if key in data and data[key] == default:
                del data[key]
        return data

    def active(self, bindings: dict[str, Any]) -> bool:
        if self.when is None:
            return True
        negate = self.when.startswith("!")
        value = bool(bindings.get(self.when.lstrip("!"), False))
        return not value if negate else value

    def score(self, trace: ActionTrace, b: dict[str, Any]) -> float:
        """The clause's own score in [0, 1] (before `requires` gating)."""
        return self.assess(trace, b)[0]

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        """The clause's own score and a one-line reason (`met`, `partial: ...`, `not met: ...`)."""
        raise NotImplementedError


class CallMade(_Clause):
    """A matching call succeeded (at least `min_count` times); partial credit for fewer. With `max_count`, more
    successful matching calls than that score 0 (a payment taken twice is not the payment asked for)."""

    type: Literal["call_made"] = "call_made"
    call: CallRef
    min_count: int = Field(default=1, ge=1, le=100)
    max_count: int | None = Field(default=None, ge=1, le=100)

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        n = sum(1 for s in trace.steps if succeeded(s) and self.call.hits(s, trace, b))
        if self.max_count is not None and n > self.max_count:
            return 0.0, f"not met: {n} successful calls of {self.call.describe(b)}, at most {self.max_count} allowed"
        errors = errored_note([self.call], trace, b)
        return _verdict(
            min(1.0, n / self.min_count),
            f"{n} of {self.min_count} successful calls of {self.call.describe(b)}{errors}",
            _no_call(self.call, trace, b),
        )


class Order(_Clause):
    """Before the first successful call matching `then`, a successful call matching `first` happened (sharing the
    `join` arguments). Scores 0 when no `then` call succeeded: an order that was never exercised earns nothing."""

    type: Literal["order"] = "order"
    first: CallRef
    then: CallRef
    join: list[str] = Field(default_factory=list, description="Arguments that must be equal in both calls.")

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        steps = trace.steps
        for i, step in enumerate(steps):
            if succeeded(step) and self.then.hits(step, trace, b):
                if any(succeeded(p) and self._joined(p, step) and self.first.hits(p, trace, b) for p in steps[:i]):
                    return 1.0, "met"
                same = f" with the same {', '.join(self.join)}" if self.join else ""
                return 0.0, f"not met: {show_call(step, i)} came before any successful {self.first.describe(b)}{same}"
        return 0.0, f"not met: {_no_call(self.then, trace, b)}"

    def _joined(self, before: TraceStep, after: TraceStep) -> bool:
        return all(k in before.arguments and before.arguments.get(k) == after.arguments.get(k) for k in self.join)

    def exercised(self, trace: ActionTrace, b: dict[str, Any]) -> bool:
        return any(succeeded(s) and self.then.hits(s, trace, b) for s in trace.steps)


class NoCall(_Clause):
    """No call matches `call` (a forbidden tool, kind or argument pattern), except calls that also match one of
    `unless` (e.g. "no write but the requested one"). Errored calls count: attempting a forbidden write is what this
    penalises.

    With `penalty: true` the clause carries no weight: the check's score is multiplied by its 0/1 score, so a
    violation zeroes the whole check (and so does an unmet `requires` gate of the penalty clause)."""

    type: Literal["no_call"] = "no_call"
    call: CallRef
    unless: list[CallRef] = Field(default_factory=list, max_length=50, description="Calls exempt from the ban.")
    penalty: bool = Field(
        default=False, description="Multiply the check's score by this clause's 0/1 score instead of weighing it."
    )

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        for i, step in enumerate(trace.steps):
            if self.call.hits(step, trace, b) and not any(u.hits(step, trace, b) for u in self.unless):
                if self.penalty:
                    return 0.0, f"penalty: violated by {show_call(step, i)}"
                return 0.0, f"not met: forbidden call {show_call(step, i)}"
        return 1.0, "met"


class _QuestionClause(_Clause):
    """Fields shared by the clauses about a confirmation question (see `language.confirmations`)."""

    call: CallRef
    action_words: list[str] | None = Field(
        default=None, max_length=50,
        description="Words naming the action, one of which the question holds (default: from the tool's name).",
    )
    details: list[Any] | None = Field(
        default=None, max_length=50,
        description="Values the question states, `$var` allowed (default: the plain values of `call.args`).",
    )
    ask_pattern: str = Field(default=DEFAULT_ASK, max_length=500, description="RE2 pattern of a confirmation question.")

    @field_validator("ask_pattern", "yes_pattern", check_fields=False)
    @classmethod
    def _linear_time(cls, pattern: str, info) -> str:
        problem = pattern_problem(pattern)
        if problem:
            raise ValueError(f"{info.field_name}: {problem}")
        return pattern

    def _asks(self, step: TraceStep, words: list[str], details: list[Any]) -> bool:
        return step.kind == "say" and asks(step.text, self.ask_pattern, words, details)


class Confirmation(_QuestionClause):
    """Each successful call matching `call` (a write) is preceded, since the previous one, by an agent question that
    names the action and its details, then a user message agreeing; a later question needs its own yes. An errored
    write is ignored. Partial credit: the share of confirmed writes; 0 with no write.

    With `penalty: true` (what a policy that requires a yes before every write adds to a check that does not pay
    confirmation itself) the clause carries no weight and asks nothing of an episode without a write: an unconfirmed
    write zeroes the check, and an episode that rightly writes nothing is not paid for it. A question then confirms
    every later write it names: "cancel A, B and C?" answered yes covers the three cancels, and a write retried
    after a fix is still the one the user agreed to."""

    type: Literal["confirmation"] = "confirmation"
    yes_pattern: str = Field(default=DEFAULT_YES, max_length=500, description="RE2 pattern of the user agreeing.")
    state_arguments: bool = Field(
        default=False, description="The question also states the value of every other argument the write then "
                                   "passes: a yes to three bags confirms no write of two.")
    penalty: bool = Field(
        default=False, description="Multiply the check's score by 1 when every write was confirmed (or none was "
                                   "made), else 0, instead of weighing the share of confirmed writes.")

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        steps = trace.steps
        details = details_for(self.call, self.details, b)
        writes = confirmed = start = 0
        first_miss = ""
        for i, step in enumerate(steps):
            if not (succeeded(step) and self.call.hits(step, trace, b)):
                continue
            writes += 1
            words = words_for(self.call, self.action_words, trace, step.name)
            wanted = details
            if self.state_arguments:
                own = [v for k, v in step.arguments.items() if k not in self.call.args]
                wanted = list(dict.fromkeys([*details, *scalar_leaves(own)]))
            miss = self._missing(steps[start:i], words, wanted)
            if miss is None:
                confirmed += 1
            elif not first_miss:
                first_miss = f"{show_call(step, i)} {miss}"
            if not self.penalty:
                start = i + 1
        if self.penalty:
            return (0.0, f"penalty: {first_miss}") if first_miss else (1.0, "met")
        if not writes:
            return 0.0, f"not met: {_no_call(self.call, trace, b)}"
        return _verdict(confirmed / writes, f"{confirmed} of {writes} writes confirmed; {first_miss}", first_miss)

    def _missing(self, before: list[TraceStep], words: list[str], details: list[Any]) -> str | None:
        """Why the write after `before` is not confirmed, or None when it is."""
        asked = max((j for j, s in enumerate(before) if self._asks(s, words, details)), default=None)
        if asked is None:
            return f"came without a {describe_question(words, details)} before it"
        if any(s.kind == "user" and user_agrees(s.text, self.yes_pattern) for s in before[asked + 1 :]):
            return None
        return "came without the user agreeing after the confirmation question"

    def exercised(self, trace: ActionTrace, b: dict[str, Any]) -> bool:
        return any(succeeded(s) and self.call.hits(s, trace, b) for s in trace.steps)


class Asked(_QuestionClause):
    """The agent asked to confirm the action of `call` (naming it and its details; see `language.confirmations`), after
    the last successful `after` call when set. For scenarios where the user declines: the question is what counts."""

    type: Literal["asked"] = "asked"
    after: CallRef | None = None
    state_values: str | None = Field(
        default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$",
        description="Binding of the other arguments the write would pass: the question also states each of their "
                    "values, as a confirmed write's question must (a question about three bags asks nothing of a "
                    "write of two the user then declines).")

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        start, since, closed = _window(self.after, trace, b)
        if closed:
            return 0.0, closed
        words = words_for(self.call, self.action_words, trace)
        details = details_for(self.call, self.details, b)
        if self.state_values:
            details = list(dict.fromkeys([*details, *scalar_leaves(b.get(self.state_values) or {})]))
        if any(self._asks(s, words, details) for s in trace.steps[start:]):
            return 1.0, "met"
        return 0.0, f"not met: no {describe_question(words, details)} was asked{since}"


class AllCompleted(_Clause):
    """Every listed call succeeded, each matched by a distinct call. Partial credit: the share completed."""

    type: Literal["all_completed"] = "all_completed"
    calls: list[CallRef] = Field(min_length=1, max_length=50)

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        done = [s for s in trace.steps if succeeded(s)]
        used: set[int] = set()
        missing: list[str] = []
        for ref in self.calls:
            hit = next((i for i, s in enumerate(done) if i not in used and ref.hits(s, trace, b)), None)
            if hit is None:
                missing.append(ref.describe(b))
            else:
                used.add(hit)
        n = len(self.calls)
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        errors = errored_note(self.calls, trace, b)
        if n == 1:
            return _verdict(float(not missing), "", f"no successful call of {shown}{errors}")
        return _verdict(
            (n - len(missing)) / n,
            f"{n - len(missing)} of {n} calls made; missing {shown}{errors}",
            f"none of the {n} calls made; missing {shown}{errors}",
        )


class Grounded(_Clause):
    """Every successful call matching `call` passes, in each of `args`, a value that appeared before it in a user
    message or a successful tool result (not invented). Partial credit: the share of grounded calls; 0 when no such
    call succeeded."""

    type: Literal["grounded"] = "grounded"
    call: CallRef
    args: list[str] = Field(min_length=1, max_length=20)

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        seen: list[str] = []
        unread: list[TraceStep] = []  # results are serialised only when a later call needs them
        total = grounded = 0
        first_miss = ""
        for i, step in enumerate(trace.steps):
            if succeeded(step) and self.call.hits(step, trace, b):
                seen += [s.result if isinstance(s.result, str) else json.dumps(s.result) for s in unread]
                unread.clear()
                total += 1
                invented = [a for a in self.args if not _appeared(step.arguments.get(a), seen)]
                grounded += not invented
                if invented and not first_miss:
                    values = ", ".join(f"{a}={show_arg(step.arguments.get(a))}" for a in invented)
                    first_miss = (f"{show_call(step, i)} passed {values}, "
                                  "not seen before in a user message or tool result")
            if step.kind == "user" and step.text:
                seen.append(step.text)
            elif succeeded(step) and step.result is not None:
                unread.append(step)
        if not total:
            return 0.0, f"not met: {_no_call(self.call, trace, b)}"
        return _verdict(grounded / total, f"{grounded} of {total} calls grounded; {first_miss}", first_miss)


def _appeared(value: Any, seen: list[str]) -> bool:
    """Every leaf of `value` stands as a whole token (a word, an id, a number) in some earlier text."""
    if value is None:
        return False
    leaves = scalar_leaves(value)
    return bool(leaves) and all(any(text_mentions(leaf, text) for text in seen) for leaf in leaves)


class FailedRef(BaseModel):
    """A call that failed for a stated reason: it matches `call`, its result is an error whose text holds `error`
    (case aside; `$var` allowed), and with `bound` it is the very call the scenario expects (every argument equal to
    one of the writes the binding `bound` lists), so a failure the agent caused with invented arguments is no
    failure of the request."""

    model_config = ConfigDict(extra="forbid")

    call: CallRef
    error: Any = Field(description="Text the error holds (a string or a `$var`).")
    bound: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$")

    def hits(self, step: TraceStep, trace: ActionTrace, b: dict[str, Any]) -> bool:
        if not (step.kind == "call" and step.error and self.call.hits(step, trace, b)):
            return False
        result = step.result.get("error") if isinstance(step.result, dict) else step.result
        want = resolve(self.error, b)
        if not (isinstance(result, str) and isinstance(want, str) and want.casefold() in result.casefold()):
            return False
        if self.bound is None:
            return True
        return any(isinstance(w, dict) and w.get("tool") == step.name and _same_arguments(w.get("args"), step.arguments)
                   for w in b.get(self.bound) or [])

    def describe(self, b: dict[str, Any]) -> str:
        return f"{self.call.describe(b)} failing with {show_value(resolve(self.error, b))}"


class Communicated(_Clause):
    """The agent told the user each value: stated, in a natural form (see `language.values`), in a sentence (3 or more
    other words) of an agent message that is neither a paste of tool results nor a list of many candidate values
    (see `checks.statements`).

    `mode: all` gives the share of values communicated; `any` gives 1 when one of them was. With `after`, only agent
    messages after the last successful call matching it count (an answer given before the data was read earns
    nothing). With `after_failures`, only messages after every one of those failures happened count: "it cannot be
    done" is paid only once the calls that show why have failed for that reason."""

    type: Literal["communicated"] = "communicated"
    values: list[Any] = Field(min_length=1, max_length=50)
    mode: Literal["all", "any"] = "all"
    after: CallRef | None = None
    after_failures: list[FailedRef] = Field(default_factory=list, max_length=10)
    about: Any = Field(default=None, description="The id of the record the values are about (`$var` allowed): a "
                       "message that names another id of its shape states nothing about it.")
    since: Literal["last", "first"] = Field(
        default="last", description="Whose messages `after` opens: those after its last successful call, or after "
        "its first (a read that lists every record showed them all the first time; reading it again un-tells nothing).")

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        start, since, closed = _window(self.after, trace, b, first=self.since == "first")
        if closed:
            return 0.0, closed
        for failure in self.after_failures:
            last = max((i for i, s in enumerate(trace.steps) if failure.hits(s, trace, b)), default=None)
            if last is None:
                return 0.0, f"not met: no call of {failure.describe(b)}: nothing showed that reason"
            start = max(start, last + 1)
        messages = [m for m in audit_messages(trace) if m.step >= start]
        about = resolve(self.about, b) if self.about is not None else None
        if isinstance(about, str):
            messages = [m for m in messages if not names_another_id(m.text, about)]
        told, misses = 0, []
        for value in (resolve(v, b) for v in self.values):
            why = self._untold(value, messages, since)
            told += why is None
            if why is not None:
                misses.append(why)
        shown = "; ".join(list(dict.fromkeys(misses))[:3])  # one message may spoil several values: say it once
        if self.mode == "any":
            return (1.0, "met") if told else (0.0, f"not met: {shown}")
        n = len(self.values)
        return _verdict(told / n, f"{told} of {n} values told; {shown}", shown)

    def _untold(self, value: Any, messages: list, since: str) -> str | None:
        """None when some message communicates `value`, else why not (naming the message that came closest)."""
        flawed = ""
        for m in messages:
            if not text_mentions(value, m.text):
                continue
            flaw = m.flaw(1 if self.mode == "any" else len(self.values), value)  # `any`: spellings of one value
            if flaw is None and in_a_sentence(value, m.text):
                return None
            if flaw is not None and not flawed:
                flawed = f"message {m.number} {flaw}"
        return flawed or f"the value {show_value(value)} was not stated in a sentence{since}"


def _id_shape(token: str) -> tuple[int, str]:
    return len(token), "".join(sorted({"A" if c.isupper() else "a" if c.islower() else "9" if c.isdigit() else c
                                       for c in token}))


@lru_cache(maxsize=1024)  # a per-turn reward reads every message again at each step; probes replay them per seed
def names_another_id(text: str, ident: str) -> bool:
    """Whether `text` names an id shaped like `ident` (same length, same kinds of characters) that is not `ident`:
    "The status of order #W4919066 is pending." is about another order than #W4919065."""
    if not any(c.isdigit() for c in ident):
        return False
    size, shape = _id_shape(ident)
    # the length first: a message pasting whole records holds thousands of tokens, few of the id's length
    return any(len(tok) == size and tok != ident and _id_shape(tok)[1] == shape for tok in _ID_TOKENS.findall(text))


_ID_TOKENS = re.compile(r"[#\w][\w#-]*\w")


class FinalState(_Clause):
    """A condition on the episode's final scenario state, at a dotted `path` (segments may be `$var`)."""

    type: Literal["final_state"] = "final_state"
    path: str = Field(min_length=1, max_length=500)
    op: Literal["eq", "ne", "in", "not_in", "exists", "absent"] = "eq"
    value: Any = None

    @field_validator("value")
    @classmethod
    def _linear_time_patterns(cls, value: Any) -> Any:
        problems = regex_problems(value, "value")
        if problems:
            raise ValueError("; ".join(problems))
        return value

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        found, got = _lookup(trace.final_state, self.path, b)
        where = ".".join(str(resolve({"$var": p[1:]}, b)) if p.startswith("$") else p for p in self.path.split("."))
        if self.op in ("exists", "absent"):
            ok = found if self.op == "exists" else not found
            return (1.0, "met") if ok else (0.0, f"not met: {where} is {'absent' if not found else 'present'}")
        if not found:
            return 0.0, f"not met: {where} is absent"
        want = resolve(self.value, b)
        if self.op in ("eq", "ne"):
            ok = matches(want, got, b) == (self.op == "eq")
        else:
            options = want if isinstance(want, list) else [want]
            ok = any(matches(o, got, b) for o in options) == (self.op == "in")
        expected = {"eq": "", "ne": "anything but ", "in": "one of ", "not_in": "none of "}[self.op]
        if ok:
            return 1.0, "met"
        return 0.0, f"not met: {where} is {show_arg(got)}, expected {expected}{show_arg(want)}"


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


class ArgumentsBound(_Clause):
    """Every successful write that the scenario expects, by tool and `key` value, passes the expected value of each
    other argument the scenario determines (stated by the user, held by a record, dictated by the policy, the option
    chosen, a computed sum), and any further argument only when it is free (`free`: tool -> argument -> the longest
    text it may be). Arguments in `text` compare as text without case, spacing or punctuation (a reason in the user's
    words); those in `skip` (tool -> arguments) are bound by another clause's own matcher (an amount within a
    tolerance). The expected writes are the binding `writes`: `[{"tool": ..., "args": {...}}]`.

    A penalty: a write on the right record with any other argument wrong (an invented payment method, seven bags where
    the user confirmed two) zeroes the check. Calls on no expected record are other clauses' business."""

    type: Literal["arguments_bound"] = "arguments_bound"
    key: str | None = Field(default=None, description="The argument naming the record a write acts on.")
    writes: str = Field(default="writes", pattern=r"^[a-z][a-z0-9_]{0,63}$", description="Binding of the writes.")
    text: list[str] = Field(default_factory=list, max_length=50)
    free: dict[str, dict[str, int]] = Field(default_factory=dict)
    skip: dict[str, list[str]] = Field(default_factory=dict)
    penalty: bool = True

    def assess(self, trace: ActionTrace, b: dict[str, Any]) -> Assessment:
        expected = b.get(self.writes) or []
        tools = {w.get("tool") for w in expected if isinstance(w, dict)}
        for i, step in enumerate(trace.steps):
            if not succeeded(step) or step.name not in tools:
                continue
            mine = [w for w in expected if w.get("tool") == step.name and self._same_record(w.get("args", {}), step)]
            if not mine:
                continue
            misses = [self._miss(w.get("args", {}), step) for w in mine]
            if all(misses):
                return 0.0, f"penalty: {show_call(step, i)} {misses[0]}"
        return 1.0, "met"

    def _same_record(self, want: dict[str, Any], step: TraceStep) -> bool:
        return self.key is None or self.key not in want or values_equal(want[self.key], step.arguments.get(self.key))

    def _miss(self, want: dict[str, Any], step: TraceStep) -> str:
        """Why `step` is not the expected write `want` (empty when it is)."""
        skip = set(self.skip.get(step.name or "", [])) | {self.key}
        got = step.arguments
        for arg, value in want.items():
            if arg in skip:
                continue
            if arg not in got:
                return f"leaves out {arg}, which the scenario sets to {show_value(value)}"
            same = same_text(value, got[arg]) if arg in self.text else values_equal(value, got[arg])
            if not same:
                return f"passes {arg}={show_value(got[arg])} where the scenario determines {show_value(value)}"
        free = self.free.get(step.name or "", {})
        for arg, value in got.items():
            if arg in want or arg in skip:
                continue
            if arg not in free:
                return f"passes {arg}={show_value(value)}, which the scenario leaves unset"
            if not isinstance(value, str) or len(value) > free[arg]:
                return f"passes {arg}={show_value(value)}, not a text of at most {free[arg]} characters"
        return ""


def _same_arguments(want: Any, got: dict[str, Any]) -> bool:
    """The same arguments, texts compared as `same_text` does (a message in other case or punctuation is the same)."""
    return isinstance(want, dict) and want.keys() == got.keys() and all(same_text(v, got[k]) for k, v in want.items())


def same_text(expected: Any, actual: Any) -> bool:
    """Two texts that differ at most in case, spacing and punctuation ("No longer needed." is "no longer needed")."""
    if not (isinstance(expected, str) and isinstance(actual, str)):
        return values_equal(expected, actual)
    return _plain(expected) == _plain(actual)


def _plain(text: str) -> str:
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text.casefold()).split())


Clause = Annotated[
    Union[CallMade, Order, NoCall, Confirmation, Asked, AllCompleted, Grounded, Communicated, FinalState,
          ArgumentsBound],
    Field(discriminator="type"),
]

Label = Literal["PRESENT", "LACKING", "NA"]


class CheckResult(BaseModel):
    """A check's score, each active clause's effective score (penalties included, 0 or 1), whether it passed, and for
    every clause (active or not) one line saying why it scored what it did."""

    score: float
    breakdown: dict[str, float]
    passed: bool
    reasons: dict[str, str] = Field(default_factory=dict)


def _is_penalty(clause: Any) -> bool:
    return bool(getattr(clause, "penalty", False))


class Check(BaseModel):
    """Weighted clauses with partial credit and penalties; `applies_if` says when a real run is relevant at all (for
    labeling).

    score = (weighted mean of the active non-penalty clauses) × (product of the active penalty clauses' 0/1 scores),
    each clause scoring 0 when a clause it `requires` (penalty or not) scored below 1.0."""

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
        weighted = [c for c in self.clauses if not _is_penalty(c)]
        if not weighted:
            raise ValueError("a check needs at least one clause that is not a penalty")
        if sum(c.weight for c in weighted) <= 0:
            raise ValueError("the weights of the clauses that are not penalties must not all be zero")
        return self

    def evaluate(self, trace: ActionTrace, bindings: dict[str, Any] | None = None) -> CheckResult:
        """Score `trace` under the scenario `bindings`; raises ValueError when no active non-penalty clause carries
        weight for these bindings."""
        b = bindings or {}
        effective: dict[str, float] = {}
        reasons: dict[str, str] = {}
        for clause in self.clauses:
            if not clause.active(b):
                name = (clause.when or "").lstrip("!")
                state = "false" if (clause.when or "").startswith("!") else "true"
                reasons[clause.id] = f"off: active only when {name} is {state}"
                continue
            raw, why = clause.assess(trace, b)
            unmet = [r for r in clause.requires if effective.get(r, 1.0) < 1.0]
            if unmet:
                effective[clause.id] = 0.0
                gates = ", ".join(f"{r} ({round(effective[r], 2)})" for r in unmet)
                reasons[clause.id] = f"gate not met: requires {gates}"
            else:
                effective[clause.id] = max(0.0, min(1.0, float(raw)))
                reasons[clause.id] = why
        active = [c for c in self.clauses if c.id in effective]
        weighted = [c for c in active if not _is_penalty(c)]
        total = sum(c.weight for c in weighted)
        if total <= 0:
            raise ValueError("no clause of this check is active for these bindings")
        score = sum(c.weight * effective[c.id] for c in weighted) / total
        for clause in active:
            if _is_penalty(clause):
                score *= effective[clause.id]
        score = max(0.0, min(1.0, score))
        return CheckResult(score=score, breakdown=effective, passed=score >= 1.0 - 1e-9, reasons=reasons)

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
