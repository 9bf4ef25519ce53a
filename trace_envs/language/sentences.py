"""Cutting a message into sentences: the one splitter the scripted user, the checks and the labelers share.

A sentence ends after ".", "!" or "?" and a space (not after an initial: "T. Ruiz"), and at every line break (agents
write bulleted summaries and numbered lists). Two views of the same cut:

- `sentences`: the text as written; a list item's marker ("1.") stays with its item, so a confirmation that opens a
  list ("Please confirm that you'd like to: / 1. Cancel QZ7Y2K") still sees the list;
- `plain_sentences`: each sentence `plain` (lower case, straight quotes) with its list marker ("1.", "-", a
  bullet) dropped: what the scripted user reads a turn as.
"""

from __future__ import annotations

import re
from functools import lru_cache

from trace_envs.language.plain import plain

# A period after a lone letter is an initial ("T. Ruiz"), not a sentence's end, nor is one after a title that comes
# before a name ("Dr. Castillo"): cut there, a confirmation that names "approver T. Ruiz" or "clinician: Dr. Castillo"
# loses its action to the sentence before the question.
_TITLES = "".join(rf"(?<!\b[{t[0]}{t[0].lower()}]{t[1:]}\.)" for t in ("Dr", "Mr", "Mrs", "Ms", "Mx", "Prof"))
SENTENCE_END = re.compile(rf"(?<=[.!?])(?<![\s\"'(][A-Za-z]\.){_TITLES}\s+|\n+")
# A piece that is only a numbered item's marker: "1. Cancel" is cut after "1." and joined again.
_LONE_MARKER = re.compile(r"\s*(\d+|[a-z])[.)]\s*")
# A list marker at the start of a sentence: a dash, an asterisk, a bullet, a number, or a letter that stands alone
# ("a) ...", not the "i." of "i.e.").
_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|[a-z][.)](?=\s))\s*")
# A `plain` sentence that opens with a condition: what it asks or announces waits for it ("If you have the order
# id, please share it"; "once you confirm, I'll cancel").
_CONDITION = re.compile(r"^(if|once|when|after|as soon as|should)\b")


def sentences(text: str) -> list[str]:
    """`text` cut into sentences: after ".", "!" or "?" and a space, and at every line break (bulleted summaries); a
    list item's marker ("1.") stays with its item."""
    out: list[str] = []
    for piece in SENTENCE_END.split(text):
        if not piece.strip():
            continue
        if out and _LONE_MARKER.fullmatch(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def plain_sentences(text: str) -> list[str]:
    """The `plain` sentences of `text`, list markers ("1.", "-", bullets) dropped."""
    return list(_plain_sentences(text))


@lru_cache(maxsize=4096)  # each agent message is read several times a turn, and replayed over validation's seeds
def _plain_sentences(text: str) -> tuple[str, ...]:
    out = []
    for s in sentences(plain(text)):
        s = _MARKER.sub("", s).strip()
        if s:
            out.append(s)
    return tuple(out)


def opens_with_condition(plain_sentence: str) -> bool:
    """Whether a `plain` sentence opens with a condition ("if", "once", "when", "after", "as soon as", "should")."""
    return _CONDITION.match(plain_sentence) is not None
