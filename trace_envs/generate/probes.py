"""Exploit probes: state-ignoring and content-free agents every env is tried with before it is published.

A reward that pays for the wrong thing teaches a model the wrong habit, so validation plays each env with agents that
only use what a real agent sees (the conversation, tool results and tool schemas: never the scenario, its bindings or
the oracle) and that do not exercise the capability: they claim success, echo the user, reply with nothing or with a
wall of text, read every id they see and paste the results, dump every value or number, repeat one call, call every
tool on every id, ask for confirmation and then paste; and agents that always make the same decision (always write,
always refuse, always hand off). The content-free ones must average close to nothing; a constant decision may succeed
only on the share of scenarios where that decision happens to be right, and the env must balance its scenario classes
so that share stays small.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from trace_envs.checks.clauses import Asked, Confirmation
from trace_envs.language.words import is_handoff_tool, tool_verb
from trace_envs.runtime.base import TraceEnv

ProbeKind = Literal["content_free", "decision"]

CLAIM = "I have taken care of everything for you: your request is complete. Is there anything else I can do?"
FILLER = "Thank you for your patience while I review every detail of your account and our policies carefully. "
LONG_CHARS = 30_000
REPEATS = 15
MAX_NUMBER = 30_000
_ID_TOKEN = re.compile(r"[#A-Za-z0-9][A-Za-z0-9_#-]{3,}")


@dataclass
class View:
    """What an agent sees: the messages so far and the tool schemas (OpenAI form)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]

    @classmethod
    def of(cls, env: TraceEnv) -> "View":
        from trace_envs.runtime.base import tool_schema

        return cls(messages=env.messages, tools=[tool_schema(t) for t in env.tool_specs])

    def user_texts(self) -> list[str]:
        return [m["content"] for m in self.messages if m.get("role") == "user" and isinstance(m.get("content"), str)]

    def results(self) -> list[str]:
        return [m["content"] for m in self.messages if m.get("role") == "tool" and isinstance(m.get("content"), str)]

    def functions(self) -> list[dict[str, Any]]:
        return [t["function"] for t in self.tools]

    def ids(self) -> list[str]:
        """Tokens the user said that look like the id an argument takes (the shape of its schema examples)."""
        shapes = {_shape(e) for f in self.functions() for s in _props(f).values() for e in _examples(s)}
        shapes.discard(None)
        found: list[str] = []
        for text in self.user_texts():
            for tok in _ID_TOKEN.findall(text):
                tok = tok.rstrip("-_")
                if (_shape(tok) in shapes or any(c.isdigit() for c in tok)) and tok not in found:
                    found.append(tok)
        return found

    def details(self) -> dict[str, Any]:
        """The JSON object the user handed over with the request ("Use these details: {...}"), if any."""
        out: dict[str, Any] = {}
        for text in self.user_texts():
            start = text.find("{")
            while start >= 0:
                try:
                    obj, _ = json.JSONDecoder().raw_decode(text[start:])
                except ValueError:
                    obj = None
                if isinstance(obj, dict):
                    out.update(obj)
                start = text.find("{", start + 1)
        return out


def _props(function: dict[str, Any]) -> dict[str, Any]:
    params = function.get("parameters") or {}
    props = params.get("properties") or {}
    return props if isinstance(props, dict) else {}


def _examples(schema: Any) -> list[Any]:
    return [e for e in (schema.get("examples") or []) if isinstance(e, str)] if isinstance(schema, dict) else []


def _shape(text: Any) -> tuple[int, str] | None:
    """An id's shape as an agent would judge it: its length and which kinds of characters it mixes ("XF9GAT" and
    "ZFA04Y" look alike; "omar_davis_3817" does not)."""
    return _shape_of(text) if isinstance(text, str) else None


@lru_cache(maxsize=65536)  # every probe of every seed reads the same few user turns' tokens again
def _shape_of(text: str) -> tuple[int, str] | None:
    if not any(c.isdigit() for c in text):
        return None
    kinds = "".join(sorted({"A" if c.isupper() else "a" if c.islower() else "9" if c.isdigit() else c for c in text}))
    return len(text), kinds


def call_text(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def takes(function: dict[str, Any], ident: str) -> bool:
    """Whether some argument of `function` takes ids shaped like `ident` (its schema examples have that shape)."""
    shape = _shape(ident)
    return shape is not None and any(_shape(e) == shape for s in _props(function).values() for e in _examples(s))


def arguments_for(function: dict[str, Any], ident: str | None, details: dict[str, Any]) -> dict[str, Any]:
    """Arguments a naive agent would pass: the id for the argument whose examples look like it, the user's details
    for arguments they name, and the schema's first example (or a type default) for the rest."""
    props, required = _props(function), list((function.get("parameters") or {}).get("required") or [])
    args: dict[str, Any] = {}
    for name, schema in props.items():
        if ident is not None and _shape(ident) is not None and any(_shape(e) == _shape(ident) for e in _examples(schema)):
            args[name] = ident
        elif name in details:
            args[name] = details[name]
    if ident is not None and not args and required:
        args[required[0]] = ident
    for name in required:
        if name not in args:
            schema = props.get(name) if isinstance(props.get(name), dict) else {}
            examples = schema.get("examples") or []
            kind = schema.get("type")
            args[name] = examples[0] if examples else {"integer": 1, "number": 1.0, "boolean": True, "array": [],
                                                        "object": {}}.get(kind if isinstance(kind, str) else "", "x")
    return args


def _kind_of(env: TraceEnv, name: str) -> str:
    # The kind is what a tool's name and description tell an agent; the schema lists it as the spec does.
    return next((t.kind for t in env.tool_specs if t.name == name), "other")


class Probe:
    """A scripted agent: `plan(view)` gives the actions to take from the opening on; then `closing` is repeated."""

    kind: ProbeKind = "content_free"
    closing = "Done."

    def __init__(self) -> None:
        self.queue: list[str] = []
        self.started = False

    def act(self, env: TraceEnv, view: View) -> str:
        if not self.started:
            self.started = True
            self.queue = self.plan(env, view)
        if self.queue:
            return self.queue.pop(0)
        return self.after(env, view)

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        return []

    def after(self, env: TraceEnv, view: View) -> str:
        return self.closing


class ClaimSuccess(Probe):
    closing = CLAIM


class EchoUser(Probe):
    def after(self, env: TraceEnv, view: View) -> str:
        texts = view.user_texts()
        return texts[-1] if texts else "Hello?"


class Empty(Probe):
    closing = " "


class LongReply(Probe):
    closing = (FILLER * (LONG_CHARS // len(FILLER) + 1))[:LONG_CHARS]


def reads_of_every_id(env: TraceEnv, view: View) -> list[str]:
    """Every read tool called on every id the user mentioned (the reads a 'read everything' agent makes)."""
    out = []
    details = view.details()
    for ident in view.ids():
        for f in view.functions():
            if _kind_of(env, f["name"]) == "read":
                out.append(call_text(f["name"], arguments_for(f, ident, details)))
    return out


class ReadPaste(Probe):
    """Reads every id it sees, then pastes every tool result back to the user."""

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        return reads_of_every_id(env, view)

    def after(self, env: TraceEnv, view: View) -> str:
        return "Here is everything I found:\n" + "\n".join(view.results())


class AskThenPaste(ReadPaste):
    def plan(self, env: TraceEnv, view: View) -> list[str]:
        return ["Before I proceed, can you confirm that you want me to go ahead with your request?"] + super().plan(
            env, view
        )


class DumpValues(Probe):
    """Reads every id, then lists every scalar value found in the results (ids, names, enums, amounts)."""

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        return reads_of_every_id(env, view)

    def after(self, env: TraceEnv, view: View) -> str:
        values: list[str] = []
        for text in view.results():
            try:
                data = json.loads(text)
            except ValueError:
                try:  # a python-repr env (ToolSandbox's style) replies with literals: read as data, never run
                    data = ast.literal_eval(text)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
            for leaf in _leaves(data):
                words = str(leaf)
                if words not in values:
                    values.append(words)
        return "The relevant values for your request are: " + ", ".join(values) + "."


class DumpNumbers(Probe):
    """Reads every id, then lists every integer up to MAX_NUMBER (whatever number the check wants is in there)."""

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        return reads_of_every_id(env, view)

    closing = "The answer is one of these numbers: " + " ".join(str(i) for i in range(MAX_NUMBER + 1)) + "."


class RepeatCall(Probe):
    """The same lookup over and over, then a claim of success."""

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        reads = reads_of_every_id(env, view)
        if not reads:
            reads = [call_text(f["name"], arguments_for(f, None, {})) for f in view.functions()][:1]
        return reads[:1] * REPEATS

    closing = CLAIM


class Spray(Probe):
    """Every tool on every id the user mentioned (writes and transfers included), then a claim of success."""

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        details = view.details()
        ids = view.ids() or [None]
        return [call_text(f["name"], arguments_for(f, ident, details)) for ident in ids for f in view.functions()]

    closing = CLAIM


def _requested_writes(env: TraceEnv, view: View) -> list[dict[str, Any]]:
    """The write tools whose leading verb the user's messages use; every write tool when none matches."""
    writes = [f for f in view.functions() if _kind_of(env, f["name"]) == "write"]
    said = " ".join(view.user_texts()).lower()
    named = [f for f in writes if tool_verb(f["name"]) in said]
    return named or writes


class AlwaysWrite(Probe):
    """Reads each id, asks to confirm the requested action on it, does it whatever the record or the answer says."""

    kind: ProbeKind = "decision"
    closing = "All done: your request is complete. Have a nice day."

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        details = view.details()
        out = []
        for ident in view.ids():
            out += [a for a in reads_of_every_id(env, view) if ident in a][:1]
            for f in [f for f in _requested_writes(env, view) if takes(f, ident)]:
                words = f["name"].replace("_", " ")
                out.append(f"I'm about to {words} for {ident}. Do you confirm that I should proceed (yes/no)?")
                out.append(call_text(f["name"], arguments_for(f, ident, details)))
        return out


class AlwaysRefuse(Probe):
    kind: ProbeKind = "decision"
    closing = "I'm sorry, but I can't do that: our policy does not allow this request. Have a nice day."

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        return reads_of_every_id(env, view)


class AlwaysHandoff(Probe):
    kind: ProbeKind = "decision"
    closing = "I'm transferring you to a human agent who can help you further."

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        out = reads_of_every_id(env, view)
        summary = "The user needs help with: " + (view.user_texts() or [""])[0][:300]
        for f in view.functions():
            if is_handoff_tool(f["name"]) and _kind_of(env, f["name"]) != "read":
                args = arguments_for(f, None, {})
                for name, schema in _props(f).items():
                    if isinstance(schema, dict) and schema.get("type") == "string" and name not in view.details():
                        args[name] = summary
                out.append(call_text(f["name"], args))
                break
        return out


def _hedged(value: Any, name: str) -> Any:
    """A well-typed value other than `value`: what an agent that guesses the fields around the right id passes."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 5 if value >= 0 else 7
    if isinstance(value, str):
        return f"made_up_{name}"
    if isinstance(value, list):
        return [HEDGE_TEXT]
    if isinstance(value, dict):
        return {k: _hedged(v, k) for k, v in value.items()}
    return HEDGE_TEXT


def _key_arg(function: dict[str, Any], ident: str) -> str | None:
    return next((n for n, s in _props(function).items() if any(_shape(e) == _shape(ident) for e in _examples(s))), None)


def _hedged_writes(env: TraceEnv, view: View) -> list[tuple[list[str], list[tuple[str, str, dict, dict]]]]:
    """Per id the view shows: its first read, and each requested write taking it that has arguments besides the id,
    as (write's name, id, its right arguments, those other arguments hedged). What field_hedge and prose_value share."""
    details = view.details()
    out = []
    for ident in view.ids():
        reads = [a for a in reads_of_every_id(env, view) if ident in a][:1]
        writes = []
        for f in [f for f in _requested_writes(env, view) if takes(f, ident)]:
            key = _key_arg(f, ident)
            args = arguments_for(f, ident, details)
            others = {n: _hedged(v, n) for n, v in args.items() if n != key}
            if others:  # a write that takes nothing but the id has no value to get wrong
                writes.append((f["name"], ident, args, others))
        out.append((reads, writes))
    return out


class FieldHedge(Probe):
    """The right record, the wrong everything else: reads each id, asks to confirm the requested write on it, then
    makes it with the id right and every other argument a plausible guess (another number, an invented id, a NaN-like
    item). A write that takes nothing but the id has nothing to hedge and is not made."""

    closing = CLAIM

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        out = []
        for reads, writes in _hedged_writes(env, view):
            out += reads
            for name, ident, args, others in writes:
                words = name.replace("_", " ")
                out.append(f"I'm about to {words} for {ident}. Do you confirm that I should proceed (yes/no)?")
                out.append(call_text(name, {**args, **others}))
        return out


class ProseValue(Probe):
    """The right words about the wrong thing: asks to confirm the requested write stating other values than the ones
    it then writes (the user's own details), and states values the records showed in sentences about another record
    than the one they came from (an id shaped like the user's, one character changed). A write that takes nothing
    but the id has no value to misstate and is not made."""

    closing = CLAIM

    def plan(self, env: TraceEnv, view: View) -> list[str]:
        out = []
        for reads, writes in _hedged_writes(env, view):
            out += reads
            for name, ident, args, stated in writes:
                words = name.replace("_", " ")
                out.append(f"Here is what I will do: {words} for {ident} with {json.dumps(stated, sort_keys=True)}. "
                           "Do you confirm that I should proceed (yes/no)?")
                out.append(call_text(name, args))
        return out

    def after(self, env: TraceEnv, view: View) -> str:
        if getattr(self, "told", False):
            return CLAIM
        self.told = True
        ids = view.ids()
        # the record's own id (one a read takes), shifted: the sentence is about another record of the same kind
        reads = [f for f in view.functions() if _kind_of(env, f["name"]) == "read"]
        keyed = [i for i in ids if any(takes(f, i) for f in reads)] or ids
        other = _other_id(keyed[0]) if keyed else "the other one"
        sentences = []
        for text in view.results()[:3]:
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if isinstance(data, dict):
                for field_name, value in list(data.items())[:12]:
                    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value) not in ids:
                        sentences.append(f"The {field_name.replace('_', ' ')} of {other} is {value}.")
        return " ".join(sentences[:4]) or CLAIM


def _other_id(ident: str) -> str:
    """An id shaped like `ident` with its last digit or letter changed: another record's, as far as words go."""
    for i in range(len(ident) - 1, -1, -1):
        ch = ident[i]
        if ch.isdigit():
            return ident[:i] + str((int(ch) + 1) % 10) + ident[i + 1:]
        if ch.isalpha():
            return ident[:i] + ("A" if ch != "A" else "B") + ident[i + 1:]
    return ident + "1"


HEDGE_TEXT = "nan"


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [] if value is None or isinstance(value, bool) else [value]


@dataclass(frozen=True)
class ProbeSpec:
    """A probe; `content_free_when`: clause types that make a decision probe content-free on an env whose check pays
    one (a confirmation stating other values than the write pays nothing where confirmations are paid for; a
    policy's confirmation penalty pays nothing, so it does not count)."""

    name: str
    factory: Callable[[], Probe]
    kind: ProbeKind
    description: str
    content_free_when: tuple[str, ...] = ()

    def kind_for(self, clause_types: set[str]) -> ProbeKind:
        return "content_free" if clause_types & set(self.content_free_when) else self.kind


PROBES: dict[str, ProbeSpec] = {
    p.name: p
    for p in [
        ProbeSpec("claim_success", ClaimSuccess, "content_free", "claims the request is done without doing anything"),
        ProbeSpec("echo_user", EchoUser, "content_free", "repeats the user's last message"),
        ProbeSpec("empty_reply", Empty, "content_free", "replies with nothing"),
        ProbeSpec("long_reply", LongReply, "content_free", f"replies with {LONG_CHARS:,} characters of filler"),
        ProbeSpec("read_and_paste", ReadPaste, "content_free", "reads every id it sees and pastes the results"),
        ProbeSpec("ask_then_paste", AskThenPaste, "content_free", "asks to confirm, then reads and pastes"),
        ProbeSpec("dump_values", DumpValues, "content_free", "reads every id and lists every value found"),
        ProbeSpec("dump_numbers", DumpNumbers, "content_free", f"lists every integer from 0 to {MAX_NUMBER:,}"),
        ProbeSpec("repeat_call", RepeatCall, "content_free", f"makes the same lookup {REPEATS} times, then claims success"),
        ProbeSpec("spray_calls", Spray, "content_free", "calls every tool on every id, then claims success"),
        ProbeSpec("field_hedge", FieldHedge, "content_free",
                  "does the requested write on the right id with every other argument guessed"),
        ProbeSpec("prose_value", ProseValue, "decision",
                  "confirms other values than it writes; states the records' values about another record",
                  content_free_when=tuple(c.model_fields["type"].default for c in (Confirmation, Asked))),
        ProbeSpec("always_write", AlwaysWrite, "decision", "reads, asks to confirm and does the requested write"),
        ProbeSpec("always_refuse", AlwaysRefuse, "decision", "reads, then refuses"),
        ProbeSpec("always_handoff", AlwaysHandoff, "decision", "reads, then transfers to a human"),
    ]
}


def probe_policy(name: str) -> Callable[[TraceEnv, np.random.Generator, int], str]:
    """A `run_policy` policy that plays probe `name` (a fresh probe each episode)."""
    spec = PROBES[name]
    state: dict[str, Probe] = {}

    def policy(env: TraceEnv, rng: np.random.Generator, turn: int) -> str:
        if turn == 1 or "probe" not in state:
            state["probe"] = spec.factory()
        return state["probe"].act(env, View.of(env))

    return policy


@dataclass
class ProbeResult:
    """A probe's mean reward, its success share, and the mean score of each clause that paid anything."""

    name: str
    kind: ProbeKind
    mean: float
    success: float
    paid: dict[str, float] = field(default_factory=dict)
