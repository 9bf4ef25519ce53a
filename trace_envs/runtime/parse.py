"""Parse an agent's text action into tool calls or a message to the user.

Accepted tool-call forms: a JSON object `{"name": ..., "arguments": {...}}` (arguments may be a JSON string), a JSON
list of those, `<tool_call>{...}</tool_call>` tags (one or more, text around them is the agent's message), an OpenAI
tool-call dict `{"type": "function", "function": {"name", "arguments"}}`, or `{"tool_calls": [...]}`. Anything else is a
message to the user. Text that tries to be a call but is malformed yields a `ParseError` the env answers with an error
observation: parsing never raises.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trace_envs.jsontext import loads
from trace_envs.limits import MAX_ARGUMENT_DEPTH, nesting_exceeds

MAX_ACTION_CHARS = 200_000
MAX_CALLS_PER_ACTION = 16

_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


@dataclass(slots=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    call_id: str | None = None


@dataclass(slots=True)
class ParsedAction:
    """`calls` to run, `text` said to the user (may be empty), or `error` when a call was malformed."""

    calls: list[ParsedCall] = field(default_factory=list)
    text: str = ""
    error: str | None = None


def clean_text(action: Any) -> str:
    """Any action as a bounded str: bytes decoded with invalid UTF-8 replaced, other objects JSON-encoded."""
    if isinstance(action, bytes):
        action = action.decode("utf-8", errors="replace")
    elif not isinstance(action, str):
        try:
            action = json.dumps(action)
        except (TypeError, ValueError):
            action = str(action)
    if len(action) > MAX_ACTION_CHARS:
        action = action[:MAX_ACTION_CHARS]
    if action.isascii():  # nothing to replace: only a lone surrogate fails to encode
        return action
    return action.encode("utf-8", errors="replace").decode("utf-8")


def parse_action(action: Any) -> ParsedAction:
    text = clean_text(action)
    stripped = text.strip()
    tagged = "<tool_call>" in stripped
    if stripped[:1] in "{[":
        got = _calls_from_json_text(stripped)
        if not tagged:  # the usual action: one JSON call (or list of calls), parsed once
            return ParsedAction(error=got) if isinstance(got, str) else _bounded(ParsedAction(calls=got))
        if not isinstance(got, str) and got:
            # A whole-action JSON call whose argument text mentions the tag is still that call.
            return _bounded(ParsedAction(calls=got))
    if tagged:
        calls: list[ParsedCall] = []
        for body in _TAG.findall(stripped):
            got = _calls_from_json_text(body.strip())
            if isinstance(got, str):
                return ParsedAction(error=got)
            calls.extend(got)
        said = _TAG.sub("", stripped).strip()
        return _bounded(ParsedAction(calls=calls, text=said))
    return ParsedAction(text=stripped)


def _bounded(parsed: ParsedAction) -> ParsedAction:
    if len(parsed.calls) > MAX_CALLS_PER_ACTION:
        return ParsedAction(error=f"too many tool calls in one action ({len(parsed.calls)} > {MAX_CALLS_PER_ACTION})")
    if not parsed.calls and not parsed.text:
        return ParsedAction(error="empty tool call: expected {\"name\": ..., \"arguments\": {...}}")
    return parsed


def _calls_from_json_text(body: str) -> list[ParsedCall] | str:
    try:
        data = loads(body)
    except RecursionError:
        return "invalid tool call JSON: nested too deeply"
    except ValueError as exc:
        return f"invalid tool call JSON: {exc}"
    return _calls_from_obj(data, depth=0)


def _calls_from_obj(data: Any, depth: int) -> list[ParsedCall] | str:
    if depth > 3:
        return "invalid tool call: nested too deeply"
    if isinstance(data, list):
        out: list[ParsedCall] = []
        for item in data:
            got = _calls_from_obj(item, depth + 1)
            if isinstance(got, str):
                return got
            out.extend(got)
        return out
    if not isinstance(data, dict):
        return f"invalid tool call: expected a JSON object with \"name\" and \"arguments\", got {type(data).__name__}"
    if "tool_calls" in data and isinstance(data["tool_calls"], list):
        return _calls_from_obj(data["tool_calls"], depth + 1)
    if isinstance(data.get("function"), dict):
        call_id = data.get("id")
        data = data["function"]
        return _one_call(data, call_id if isinstance(call_id, str) else None)
    return _one_call(data, None)


def _one_call(data: dict[str, Any], call_id: str | None) -> list[ParsedCall] | str:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        return "invalid tool call: missing \"name\" (a string)"
    args = data.get("arguments", data.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = loads(args) if args.strip() else {}
        except (ValueError, RecursionError) as exc:
            return f"invalid arguments for {name}: not JSON ({exc})"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"invalid arguments for {name}: expected a JSON object, got {type(args).__name__}"
    if nesting_exceeds(args):
        return f"invalid arguments for {name}: nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    return [ParsedCall(name=name, arguments=args, call_id=call_id)]

