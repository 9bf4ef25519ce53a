"""Regexes built from word lists: how a word, a phrase or a verb is found in a message with its inflections.

Every builder escapes its words, so Python's `re` runs them (no pattern from a spec or a trajectory reaches one).

- `words_regex`: any of the words at the start of a word, case-insensitively ("cancel" finds "cancelling" and
  "cancellation"; a trailing "e" or "y" is optional: "update" finds "updating", "modify" "modified"). The checks,
  the labelers and the scripted user all find an action's words with it (the user's own builder, which kept
  "add" from finding "address", was dropped: with it or this one, the snapshot of mined specs and env checks and
  both hand-labelled agreement figures are the same, and the user's yes is guarded by the request's target);
- `phrases_regex`: whole phrases, an optional plural "s" (the names of facts and of what a user-side action acts
  on); `verb_phrases_regex`: verb phrases with the head verb inflected and its particle up to three words on
  ("turn on" finds "turning on", "turn the notifications on").
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
