"""Message text made plain for reading: lower case, typographic quotes straight ("can’t" is "can't").

Two strengths, each for the reader that needs it:

- `plain`: the first `MAX_READ` characters, straight quotes, an em dash as " - " and markdown emphasis ("**")
  dropped, line breaks kept: what a turn is read as (its kind, a refusal);
- `normalize`: straight apostrophes, and `_` and `-` read as spaces, whitespace collapsed: what names of facts,
  actions and targets are matched against ("booking_reference" ~ "booking reference").
"""

from __future__ import annotations

import re

# Like a person, a reader takes in the start of a wall of text, not all of it.
MAX_READ = 4_000

_APOSTROPHES = (("\u2019", "'"), ("\u2018", "'"))
_PLAIN = (*_APOSTROPHES, ("\u201c", '"'), ("\u201d", '"'), ("\u2014", " - "), ("**", ""))
_JOINERS = re.compile(r"[_\-]+")


def _replace(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for a, b in pairs:
        text = text.replace(a, b)
    return text


def plain(text: str) -> str:
    """The first `MAX_READ` characters in lower case, typographic quotes made plain, an em dash as " - " and
    markdown emphasis dropped; line breaks kept."""
    return _replace(text[:MAX_READ].lower(), _PLAIN)


def normalize(text: str) -> str:
    """Lower case, typographic apostrophes made plain, `_` and `-` read as spaces, whitespace collapsed."""
    return " ".join(_JOINERS.sub(" ", _replace(text, _APOSTROPHES).lower()).split())
