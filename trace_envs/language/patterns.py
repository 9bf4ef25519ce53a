"""Regexes built from word lists: how a word, a phrase or a verb is found in a message with its inflections.

Every builder escapes its words, so Python's `re` runs them (no pattern from a spec or a trajectory reaches one).
Three ways of finding a word, each for the reader that needs it:

- `words_regex`: any of the words at the start of a word, case-insensitively ("cancel" finds "cancelling" and
  "cancellation"; a trailing "e" or "y" is optional: "update" finds "updating", "modify" "modified"). The checks and
  labelers find an action's words with it;
- `inflected_regex`: on `normalize`d text, a long word with any ending, a short one (three letters or fewer) only
  with a plain suffix, so "add" does not find "address". The scripted user finds its request's action with it;
- `phrases_regex`: whole phrases, an optional plural "s"; `verb_phrases_regex`: verb phrases with the head verb
  inflected and its particle up to three words on ("turn on" finds "turning on", "turn the notifications on").
"""

from __future__ import annotations

import re
from functools import lru_cache

from trace_envs.language.plain import normalize


def word_pattern(words: list[str]) -> str:
    """A regex (for `re`, built from escaped literals) matching any of `words` at the start of a word, so "cancel"
    also finds "cancelling" and "cancellation"; a trailing "e" or "y" is optional so "update" finds "updating" and
    "modify" finds "modified"."""
    stems = {(w[:-1] if w[-1:] in ("e", "y") and len(w) > 4 else w).lower() for w in words if w}
    stems = sorted(stems, key=len, reverse=True)
    return r"(?<![^\W_])(?:" + "|".join(re.escape(s) for s in stems) + ")" if stems else r"(?!)"


@lru_cache(maxsize=256)
def words_regex(words: tuple[str, ...]) -> re.Pattern[str]:
    """`word_pattern(words)` compiled, case-insensitive."""
    return re.compile(word_pattern(list(words)), re.IGNORECASE)


def inflected_regex(words: tuple[str, ...]) -> re.Pattern[str] | None:
    """Matches any of `words` with its usual inflections ("cancel" -> "cancellation", "update" -> "updating"); short
    words only take plain suffixes, so "add" does not match "address". None for no words."""
    parts = []
    for w in (normalize(w) for w in words):
        if not w:
            continue
        if len(w) <= 3:
            parts.append(rf"{re.escape(w)}(?:s|es|ed|ded|ing|ding)?\b")
        else:
            parts.append(re.escape(w[:-1] if w.endswith("e") else w) + r"\w*")
    return re.compile(rf"\b(?:{'|'.join(parts)})") if parts else None


def phrases_regex(phrases: list[str]) -> re.Pattern[str]:
    """Matches any of `phrases` as whole words (longest first), with an optional plural "s"."""
    alternatives = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})s?(?![a-z0-9])")


def verb_phrases_regex(verbs: tuple[str, ...]) -> re.Pattern[str]:
    """Matches any verb phrase with its head word inflected ("turn on" -> "turning on", "turned it on", "turn the
    notifications on"): a particle may follow up to three words after the head."""
    parts = []
    for verb in (normalize(v) for v in verbs):
        head, *rest = verb.split()
        stem = re.escape(head[:-1] if head.endswith("e") and len(head) > 3 else head) + r"(?:s|e|es|ed|d|ing|ning)?"
        if rest:
            tail = r"\s+".join(re.escape(w) for w in rest)
            parts.append(rf"{stem}(?:\s+[a-z']+){{0,3}}?\s+{tail}")
        else:
            parts.append(stem)
    return re.compile(rf"\b(?:{'|'.join(parts)})\b")
