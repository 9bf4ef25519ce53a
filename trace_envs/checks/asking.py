"""What a confirmation clause asks of a message: which action words and details, from the clause and the trace.

How a message is read (does it ask to confirm, does the user agree) is `language.confirmations`; this module picks
what that reading is given: the action words of the write being confirmed (`language.words.action_words`), the
details it must state (by default the plain values of the call reference's arguments, e.g. the target id), and the
clause's ask and yes patterns, compiled by RE2 like any pattern a spec supplies.
"""

from __future__ import annotations

from typing import Any

from trace_envs.checks.matching import compile_pattern, is_operator, resolve
from trace_envs.checks.refs import CallRef, show_value
from trace_envs.checks.trace import ActionTrace
from trace_envs.language.confirmations import agrees, asks_to_confirm
from trace_envs.language.words import action_words


def words_for(ref: CallRef, explicit: list[str] | None, trace: ActionTrace, tool: str | None = None) -> list[str]:
    """The action words a question must hold: `explicit` when given; else those of `tool` (the write being
    confirmed), of the reference's tool, or, for a reference by kind only, of every tool of that kind in the trace."""
    if explicit is not None:
        return list(explicit)
    name = tool or ref.tool
    if name is not None:
        return action_words(name)
    tools = [t for t, k in sorted(trace.tool_kinds.items()) if k == ref.kind]
    return list(dict.fromkeys(w for t in tools for w in action_words(t)))


def details_for(ref: CallRef, explicit: list[Any] | None, bindings: dict[str, Any]) -> list[Any]:
    """The details a question must state: `explicit` (with `$var`s resolved) when given, else every plain value in
    the reference's arguments (matchers such as `$not` or `$regex` name no value and are skipped; booleans too)."""
    if explicit is not None:
        return [resolve(d, bindings) for d in explicit]
    out: list[Any] = []
    for matcher in ref.args.values():
        out += _plain_leaves(resolve(matcher, bindings))
    return list(dict.fromkeys(out))


def asks(text: str | None, ask_pattern: str, words: list[str], details: list[Any]) -> bool:
    """Whether an agent message asks to confirm the action named by `words` with `details`
    (`language.confirmations.asks_to_confirm`, the spec's `ask_pattern` on RE2)."""
    return asks_to_confirm(text, compile_pattern(ask_pattern), words, details)


def user_agrees(text: str | None, yes_pattern: str) -> bool:
    """Whether a user message agrees: matches the spec's `yes_pattern` (on RE2)."""
    return agrees(text, compile_pattern(yes_pattern))


def describe_question(words: list[str], details: list[Any]) -> str:
    """The question a clause wants, in words: `confirmation question naming the action (cancel) and 'QZ7Y2K'`."""
    out = "confirmation question"
    if words:
        out += f" naming the action ({'/'.join(words[:6])})"
    if details:
        out += (" and " if words else " stating ") + ", ".join(show_value(d) for d in details[:6])
    return out


def _plain_leaves(value: Any) -> list[Any]:
    if is_operator(value):
        return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _plain_leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _plain_leaves(v)]
    if value is None or isinstance(value, bool):
        return []
    return [value]
