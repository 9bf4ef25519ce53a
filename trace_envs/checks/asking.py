"""What counts as the agent asking the user to confirm a write, and as the user agreeing.

An agent message asks for confirmation of a write only when one of its sentences (a) asks: it ends in "?" or stands
in for one as real agents write it ("Please confirm ...", "reply 'yes' to confirm", "(yes/no)", "yes or no"), and
matches the ask pattern; (b) names the action near the ask: one of its action words (by default the write tool's verb,
its synonyms and the thing it acts on, see `checks.words`) in that sentence, in the sentence before it and the
questions between ("I'm about to cancel QZ7Y2K. Is that right? Reply yes to proceed."), or in the list it opens
("Please confirm that you'd like to: / - Cancel QZ7Y2K"); and (c) the message states every detail (by default the
plain values of the call reference's arguments, e.g. the target id, found with `text_mentions`). So "Shall I
proceed?" asks nothing, nor does an open offer: "Would you like me to help with anything else, such as checking
whether the order can be cancelled?". A user message then agrees when it matches the yes pattern. Both
patterns come from specs and run on RE2.
"""

from __future__ import annotations

import re
from typing import Any

from trace_envs.checks.matching import compile_pattern, is_operator, resolve
from trace_envs.checks.refs import CallRef, show_value
from trace_envs.checks.text import sentences as split_sentences
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
# "Confirm with a yes", "(yes/no)", "yes or no", "Please let me know if you'd like me to proceed".
_STANDS_FOR_QUESTION = re.compile(
    r"(?i)\b(please|kindly) confirm\b|\b(reply|respond|answer|say|type|confirm)\b\W+(with\W+)?(a\W+)?\W*yes\b"
    r"|\(\s*yes\s*/\s*no\s*\)|\byes or no\b|\blet me know (if|whether) you('d|’d| would)? ?(like|want) me to\b"
)
# An open offer asks to confirm nothing: "Would you like me to help with anything else, such as ...?"
_OPEN_OFFER = re.compile(r"(?i)\b(anything|something) (else|more)\b|\bany other\b")
# An item of a list: a bullet, a number or a dash, or an indented line.
_LIST_ITEM = re.compile(r"^\s*([-*•–]|\d+[.)]|\s)")


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
    sentences = split_sentences(text)
    if not any(_asks_in(sentences, i, ask, named) for i in range(len(sentences))):
        return False
    return all(text_mentions(d, text) for d in details)


def _asks_in(sentences: list[str], i: int, ask, named: re.Pattern[str] | None) -> bool:
    """Whether sentence i asks (see `_is_question`), matches `ask`, is no open offer, and the action is named in it,
    in the sentences that lead up to it, or in the list it opens."""
    sentence = sentences[i]
    if not _is_question(sentence) or ask.search(sentence) is None or _OPEN_OFFER.search(sentence):
        return False
    return named is None or any(named.search(s) for s in _around(sentences, i))


def _is_question(sentence: str) -> bool:
    return "?" in sentence or _STANDS_FOR_QUESTION.search(sentence) is not None


def _around(sentences: list[str], i: int) -> list[str]:
    """Sentence i, the questions right before it and the sentence before those ("I'll cancel QZ7Y2K. Is that
    right? Reply yes to proceed."), and, when it ends in a colon, the list it opens ("Please confirm that you'd
    like to: / - cancel QZ7Y2K")."""
    start = i
    while start and _is_question(sentences[start - 1]):
        start -= 1
    out = sentences[max(start - 1, 0) : i + 1]
    if _opens_list(sentences[i]):
        end = i + 1
        while end < len(sentences) and not _opens_list(sentences[end]) and _LIST_ITEM.match(sentences[end]):
            end += 1
        out += sentences[i + 1 : end]
    return out


def _opens_list(sentence: str) -> bool:
    return sentence.rstrip().endswith(":")


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
