"""What counts as the agent asking the user to confirm a write, and as the user agreeing.

An agent message asks for confirmation of a write only when one of its sentences (a) asks: it ends in "?" or stands
in for one as real agents write it ("Please confirm ...", "reply 'yes' to confirm", "(yes/no)", "yes or no"), and
matches the ask pattern; (b) names the action near the ask: one of its action words (by default the write tool's verb,
its synonyms and the thing it acts on, see `checks.words`) within a few words of the ask phrase in that sentence, or
anywhere in the sentence before it ("I'm about to cancel QZ7Y2K. Do you confirm?"); and (c) the message states every
detail (by default the plain values of the call reference's arguments, e.g. the target id, found with
`text_mentions`). So "Shall I proceed?" asks nothing, nor does "Would you like me to help with anything else, such as
checking whether the order can be cancelled?". A user message then agrees when it matches the yes pattern. Both
patterns come from specs and run on RE2.
"""

from __future__ import annotations

import re
from typing import Any

from trace_envs.checks.matching import compile_pattern, is_operator, resolve
from trace_envs.checks.refs import CallRef, show_value
from trace_envs.checks.text import text_mentions
from trace_envs.checks.trace import ActionTrace
from trace_envs.checks.words import action_words, words_regex

# RE2-compatible (no lookbehind): they run on RE2 like any pattern a spec supplies.
DEFAULT_ASK = (
    r"(?i)\b(confirm|confirmation|proceed|shall i|should i|would you like me to|do you want me to|"
    r"is that (correct|right|ok)|go ahead|are you sure|ok to)\b"
)
DEFAULT_YES = r"(?i)\b(yes|yeah|yep|yup|confirm(ed)?|go ahead|proceed|sure|please do|correct|that's right|ok(ay)?)\b"


# What real agents write instead of a question mark: "Please confirm ...", "Please reply “yes” to confirm",
# "Confirm with a yes", "(yes/no)", "yes or no".
_STANDS_FOR_QUESTION = re.compile(
    r"(?i)\b(please|kindly) confirm\b|\b(reply|respond|answer|say|type|confirm)\b\W+(with\W+)?(a\W+)?\W*yes\b"
    r"|\(\s*yes\s*/\s*no\s*\)|\byes or no\b"
)
# Sentence ends; a newline ends one too (bulleted summaries).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# How many words from the ask phrase the action word may stand, in the same sentence.
NEAR_WORDS = 12
_WORD = re.compile(r"[\w'’]+")


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
    """Whether an agent message asks to confirm the action named by `words` with `details` (see the module doc);
    an empty `words` or `details` list asks for nothing more than the question."""
    if not text or ("?" not in text and _STANDS_FOR_QUESTION.search(text) is None):
        return False
    ask = compile_pattern(ask_pattern)
    named = words_regex(tuple(words)) if words else None
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    if not any(_asks_in(sentences, i, ask, named) for i in range(len(sentences))):
        return False
    return all(text_mentions(d, text) for d in details)


def _asks_in(sentences: list[str], i: int, ask, named: re.Pattern[str] | None) -> bool:
    """Whether sentence i is a question (or its stand-in) matching `ask` with an action word near it."""
    sentence = sentences[i]
    if "?" not in sentence and _STANDS_FOR_QUESTION.search(sentence) is None:
        return False
    asks_at = [(m.start(), m.end()) for m in ask.finditer(sentence)]
    if not asks_at:
        return False
    if named is None or (i and named.search(sentences[i - 1])):
        return True
    for word in named.finditer(sentence):
        for start, end in asks_at:
            between = sentence[end : word.start()] if word.start() >= end else sentence[word.end() : start]
            if len(_WORD.findall(between)) < NEAR_WORDS:
                return True
    return False


def agrees(text: str | None, yes_pattern: str) -> bool:
    """Whether a user message agrees (matches the yes pattern)."""
    return bool(text) and compile_pattern(yes_pattern).search(text) is not None


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
