"""What counts as the agent asking the user to confirm an action, and as the user agreeing.

Three questions are asked of a message, by three readers, from one set of phrasings:

- `asks_to_confirm` (the reward and the labelers): does it ask to confirm *this* write? Only when one of its
  sentences (a) asks: it ends in "?" or stands in for one as real agents write it ("Please confirm ...", "reply
  'yes' to confirm", "(yes/no)", "yes or no"), and matches the ask pattern (`DEFAULT_ASK` unless a spec gives one);
  (b) names the action near the ask: one of its action words (by default the write tool's verb, its synonyms and the
  thing it acts on, see `words.action_words`) in that sentence, in the sentence before it and the questions between
  ("I'm about to cancel QZ7Y2K. Is that right? Reply yes to proceed."), or in the list it opens ("Please confirm
  that you'd like to: / - Cancel QZ7Y2K"); and (c) the message states every detail (by default the plain values of
  the call's arguments, e.g. the target id, found with `values.text_mentions`). So "Shall I proceed?" asks
  nothing, nor does an open offer: "Would you like me to help with anything else, such as checking whether the
  order can be cancelled?". A user message then `agrees` when it matches the yes pattern (`DEFAULT_YES`). Both
  patterns come from specs and run on RE2 (the checks compile them; these functions take them compiled).
- `asks_for_yes` (the scripted user's reading of a turn's kind): does the turn ask for a yes to an action of the
  agent's side ("Would you like me to cancel ...?", "Please confirm with yes to proceed", "Shall I ...?"), any
  action (reads such as "list" or "look up" are none)? Not the reward's test without words and details: read that
  way, the user's hand-labelled turns agree 334 times in 359 instead of 353 (questions for facts that hold
  "confirm" or "would you like" are taken for confirmations).
- `asks_confirmation` (the scripted user, before it answers): does the message use confirmation wording in a
  question, a question as the reward reads one ("?" or what stands in for one)? Broader than `asks_for_yes`,
  because the user says yes only when the message also names one of its requests' action and target, which guards
  the yes. (It took only "?" and "please / can you confirm" before; so "... Please let me know if you'd like me to
  proceed with that." asked the reward for a yes, not the user. Read as the reward reads a question, the snapshot
  and both figures are the same.)

And of a domain's policy text, `policy_requires_confirmation`: does it ask for explicit confirmation before actions
that change data? The miner then requires it of every write, and the policy excerpt an env shows keeps the block
that says so (the excerpt's own looser test, "confirm" with "action", "update" or "database", kept the same blocks
on every policy of the snapshot's data sets and was dropped).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

from trace_envs.language.sentences import sentences
from trace_envs.language.values import text_mentions
from trace_envs.language.patterns import words_regex


class Pattern(Protocol):
    """A compiled pattern (`re` or RE2): what a spec's ask or yes pattern is compiled to."""

    def search(self, text: str) -> Any: ...


# ---- the phrasings ------------------------------------------------------------------------------------------------
# The words of a confirmation question, RE2-compatible (no lookbehind): the default ask pattern runs on RE2 like any
# pattern a spec supplies, and the scripted user's confirmation wording is a superset of it.
_ASK_WORDS = (
    r"confirm|confirmation|proceed|shall i|should i|would you like me to|do you want me to|"
    r"is that (correct|right|ok)|go ahead|are you sure|ok to"
)
DEFAULT_ASK = rf"(?i)\b({_ASK_WORDS})\b"
DEFAULT_YES = r"(?i)\b(yes|yeah|yep|yup|confirm(ed)?|go ahead|proceed|sure|please do|correct|that's right|ok(ay)?)\b"
# "(yes/no)", "yes or no": a question spelled out.
_YES_OR_NO = r"\(\s*yes\s*/\s*no\s*\)|\byes or no\b"
_PLEASE_CONFIRM = r"\b(please|kindly) confirm\b"

# What real agents write instead of a question mark: "Please confirm ...", "Please reply “yes” to confirm",
# "Confirm with a yes", "(yes/no)", "yes or no", "Please let me know if you'd like me to proceed".
_STANDS_FOR_QUESTION = re.compile(
    rf"(?i){_PLEASE_CONFIRM}|\b(reply|respond|answer|say|type|confirm)\b\W+(with\W+)?(a\W+)?\W*yes\b"
    rf"|{_YES_OR_NO}|\blet me know (if|whether) you('d|’d| would)? ?(like|want) me to\b"
)
# An open offer asks to confirm nothing: "Would you like me to help with anything else, such as ...?"
_OPEN_OFFER = re.compile(r"(?i)\b(anything|something) (else|more)\b|\bany other\b")
# An item of a list: a bullet, a number or a dash, or an indented line.
_LIST_ITEM = re.compile(r"^\s*([-*•–]|\d+[.)]|\s)")

# The scripted user's confirmation wording (on `normalize`d text).
_CONFIRM = re.compile(
    rf"\b({_ASK_WORDS}|okay to|is (that|this|it) (correct|right|ok|okay|fine|alright)|yes or no|can i go|may i|"
    r"do you (still )?(want|wish) to|would you (still )?like to)\b"
)

# Actions the agent takes on its side: what a confirmation asks about (reads such as "list" or "look up" are not).
_WRITE = (
    r"(proceed|go ahead|continue|book|cancel|change|modify|upgrade|downgrade|update|exchange|return|issue|send|"
    r"submit|refund|transfer|add|remove|switch|place|apply|process|finalize|make (the|these|this|those) changes?|"
    r"use)\w*"
)
_WRITE_VERB = re.compile(rf"\b{_WRITE}\b")
_WOULD_YOU = re.compile(rf"\b(would|do) you (still )?(like|want|wish) (me )?to\b.{{0,80}}?\b{_WRITE}\b")
_CHOICE = re.compile(r"\b(which|what|how)\b[^.?!]{0,40}\bwould you")
_CONFIRM_YOU_WANT = re.compile(
    rf"\bconfirm(ation)? (if|that|whether) you('d| would)? (still )?(want|like|wish|would like) (me )?to\b.{{0,60}}?"
    rf"\b{_WRITE}\b"
)
_CONFIRM_ALL = re.compile(
    r"\bconfirm (if|that|whether) (everything|all|this|these|the (details|changes|above))|"
    r"\bconfirm( (with|by)( replying)?| if you'd like)? \"?yes|\bconfirm (this|these|both|the) \w+( \w+)? to proceed|"
    r"\bconfirm to proceed|\bconfirm\b.{0,200}\bto proceed\b|\bconfirm[.!]?$|\bconfirm,? and i('ll| will)|"
    rf"^to confirm, you (want|would like)|\breply \"?yes|{_YES_OR_NO}|\bdo you confirm\b|"
    r"\bis (this|that|everything|all this) (correct|right|ok)\b|\bshall i\b|\bshould i (proceed|go ahead)"
)
# Every `_CONFIRM_ALL` alternative holds one of these words: a cheap test first, as most sentences hold none.
_CONFIRM_WORDS = re.compile(r"confirm|yes|shall|should|correct|right|\bok\b")
_DO_THAT = re.compile(r"\bwould you like me to do (that|this|so)\b")


# ---- the reward's and the labelers' reading -------------------------------------------------------------------------
def asks_to_confirm(text: str | None, ask: Pattern, words: list[str], details: list[Any]) -> bool:
    """Whether an agent message asks to confirm the action named by `words` with `details` (see the module doc),
    `ask` being the compiled ask pattern; an empty `words` or `details` list asks for nothing more than the question."""
    if not text or not _is_question(text):
        return False
    named = words_regex(tuple(words)) if words else None
    cut = sentences(text)
    if not any(_asks_in(cut, i, ask, named) for i in range(len(cut))):
        return False
    return all(text_mentions(d, text) for d in details)


# How real users say no to a confirmation (tau-bench and tau2-bench runs: "No, that's okay.", "Actually, I've changed
# my mind.", "I want to think about it for a bit."): not any reply short of a yes, since an agent asking "could you
# provide your id?" hears the id, and "No, that's okay." holds a yes word too.
_DECLINE = re.compile(r"(?i)^\W*(?:no|nope|nah|actually|never ?mind)\b|\b(?:changed? my mind|think about it|not now|"
                      r"hold off|not yet|don'?t (?:do|proceed|go ahead))\b")


def declines(text: str | None) -> bool:
    """Whether a user's reply to a confirmation question says no."""
    return bool(text) and _DECLINE.search(text) is not None


def agrees(text: str | None, yes: Pattern) -> bool:
    """Whether a user message agrees (matches the compiled yes pattern)."""
    return bool(text) and yes.search(text) is not None


def _asks_in(cut: list[str], i: int, ask: Pattern, named: re.Pattern[str] | None) -> bool:
    """Whether sentence i asks (see `_is_question`), matches `ask`, is no open offer, and the action is named in it,
    in the sentences that lead up to it, or in the list it opens."""
    sentence = cut[i]
    if not _is_question(sentence) or ask.search(sentence) is None or _OPEN_OFFER.search(sentence):
        return False
    return named is None or any(named.search(s) for s in _around(cut, i))


def _is_question(sentence: str) -> bool:
    if "?" in sentence:
        return True
    # Every `_STANDS_FOR_QUESTION` alternative holds one of these words: a message pasting whole records holds none,
    # and the pattern's search over it cost milliseconds.
    low = sentence.lower()
    if "yes" not in low and "confirm" not in low and "let me know" not in low:
        return False
    return _STANDS_FOR_QUESTION.search(sentence) is not None


def _around(cut: list[str], i: int) -> list[str]:
    """Sentence i, the questions right before it and the sentence before those ("I'll cancel QZ7Y2K. Is that
    right? Reply yes to proceed."), and, when it ends in a colon, the list it opens ("Please confirm that you'd
    like to: / - cancel QZ7Y2K")."""
    start = i
    while start and _is_question(cut[start - 1]):
        start -= 1
    out = cut[max(start - 1, 0) : i + 1]
    if _opens_list(cut[i]):
        end = i + 1
        while end < len(cut) and not _opens_list(cut[end]) and _LIST_ITEM.match(cut[end]):
            end += 1
        out += cut[i + 1 : end]
    return out


def _opens_list(sentence: str) -> bool:
    return sentence.rstrip().endswith(":")


# ---- the scripted user's reading ----------------------------------------------------------------------------------
def asks_for_yes(plain_cut: list[str]) -> bool:
    """Whether a turn (its `plain_sentences`) asks for a yes to an action of the agent's side."""
    return _asks_for_yes(tuple(plain_cut))


@lru_cache(maxsize=8192)  # each agent turn is read by the user and by the checks, replayed over the seeds
def _asks_for_yes(plain_cut: tuple[str, ...]) -> bool:
    for i, s in enumerate(plain_cut):
        # "Which order would you like to modify?" asks for a choice, not for a yes
        would = _WOULD_YOU.search(s) and not _CHOICE.search(s)
        if would or _CONFIRM_YOU_WANT.search(s) or _CONFIRM_WORDS.search(s) and _CONFIRM_ALL.search(s):
            return True
        if _DO_THAT.search(s) and i > 0 and _WRITE_VERB.search(plain_cut[i - 1]):
            return True
    return False


def confirmation_wording(normalized: str) -> bool:
    """Whether `normalize`d text uses the wording of a confirmation ("shall I", "is that correct", "proceed")."""
    return _CONFIRM.search(normalized) is not None


def asks_confirmation(normalized: str) -> bool:
    """Whether `normalize`d text asks a confirmation: its wording, in a question ("?") or what stands in for one
    ("please confirm", "reply yes", "(yes/no)", "let me know if you'd like me to"), as the reward reads one."""
    return confirmation_wording(normalized) and _is_question(normalized)


# ---- a domain's policy ------------------------------------------------------------------------------------------
_POLICY_CONFIRM = re.compile(r"\bconfirm")
_POLICY_BEFORE = re.compile(r"\b(before|prior to)\b")
_POLICY_WRITE = re.compile(r"\b(action|update|change|database|write)")


def policy_requires_confirmation(policy: str) -> bool:
    """Whether a policy (or one of its blocks) asks for explicit confirmation before actions that change data."""
    lowered = policy.lower()
    return bool(_POLICY_CONFIRM.search(lowered) and _POLICY_BEFORE.search(lowered) and _POLICY_WRITE.search(lowered))
