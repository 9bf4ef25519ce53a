"""Where a value is stated in free text: the one place values are matched in messages (numbers, dates, ids, names).

A value is found in its natural forms, case-insensitively and as whole words:

- strings: underscores and hyphens read as spaces (`basic_economy` ~ "basic economy", "Basic-Economy"); British and
  American spellings of a doubled l agree (`cancelled` ~ "canceled", "travelling" ~ "traveling");
- numbers (and strings that look like one): a number token in any common format ("$1,234.50", "1234.5", "1,234"),
  also with a unit written on ("15GB", "2.5kg", "20%"), never digits inside an id such as "JG7FMM" or "2FBBAH";
- ISO dates (`2024-05-15`, or the date part of `2024-05-15T08:28:51`): "2024-05-15", "May 15, 2024", "May 15th, 2024",
  "15 May 2024", "05/15/2024", "2024/05/15", "May 15", "15 May" (month names full or abbreviated; a day and month
  followed by another year do not count);
- one capital letter (a section "B"): the letter standing alone, case and all (see `letter_spans`);
- lists and objects: every leaf is found.

The regexes here are built from escaped literals, so Python's `re` runs them (no pattern from a spec reaches it).
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from typing import Any

Span = tuple[int, int]

# A unit written on to a number ("15GB") is no part of an id when nothing word-like follows it.
_UNITS = r"(?:[kmgt]b|ghz|mhz|mah|mm|cm|km|ml|kg|lbs?|oz|mi|hrs?|mins?|%)"
_NUMBER = re.compile(rf"(?<![\w.])-?\$?\d[\d,]*(?:\.\d+)?(?:{_UNITS}(?![\w%]))?(?![\w%]|\.\d)", re.IGNORECASE)
_UNIT_TAIL = re.compile(rf"{_UNITS}$", re.IGNORECASE)
_NUMERIC = re.compile(r"\s*-?\$?\d[\d,]*(?:\.\d+)?\s*")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")
_SEPARATORS = re.compile(r"[\s_\-]+")
_WORD = re.compile(r"[^\W\d_]+")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
# Tolerance for a number stated in text: cents.
NUMBER_TOLERANCE = 0.005


def text_mentions(value: Any, text: str) -> bool:
    """Whether `text` states `value` in one of its natural forms (see the module docstring)."""
    if isinstance(value, (str, int, float)) and isinstance(text, str):
        return _mentions_scalar(value, text)
    return bool(mention_spans(value, text))


# A reward audits every message against every value the tool results showed, and validation replays the same seed's
# messages in every probe and mutant; typed, as True, 1 and 1.0 are stated differently.
@lru_cache(maxsize=16384, typed=True)
def _mentions_scalar(value: str | int | float, text: str) -> bool:
    return bool(mention_spans(value, text))


def might_state(value: Any, text: str) -> bool:
    """A cheap necessary condition of `text_mentions(value, text)`: False only where `text` cannot state `value` (an
    ASCII text that holds the first word of none of the value's spellings, case aside). True whenever the condition
    says nothing (numbers, dates, one letter, other values, text beyond ASCII), so a caller skips only what is surely
    not stated."""
    if not text.isascii():
        return True
    try:
        anchors = _anchors(value)
    except TypeError:  # an unhashable value
        return True
    return anchors is None or any(a in _lower(text) for a in anchors)


@lru_cache(maxsize=4096, typed=True)
def _anchors(value: Any) -> tuple[str, ...] | None:
    """The lower-cased first word of each spelling of a string value (one of which `_phrase_spans` finds first in a
    text stating it), when each is plain ASCII letters and digits; None when a statement of `value` holds no such
    word for sure (a number, a date, a single character, a value that is no string)."""
    if not isinstance(value, str) or _NUMERIC.fullmatch(value):
        return None
    needle = value.strip()
    if len(needle) <= 1 or iso_date(needle) is not None:
        return None
    firsts = []
    for form in _spellings(needle):
        parts = [p.lower() for p in _SEPARATORS.split(form) if p]
        if not parts:
            return ()  # nothing to find: `_phrase_spans` finds no span
        if not (parts[0].isascii() and parts[0].isalnum()):
            return None
        firsts.append(parts[0])
    return tuple(firsts)


def mention_spans(value: Any, text: str) -> list[Span]:
    """Where `text` states `value`: the spans of every form found (for a list or object, of every leaf; empty unless
    every leaf is found). `None` and empty strings are never stated."""
    if not text:
        return []
    if isinstance(value, (dict, list)):
        leaves = scalar_leaves(value, keep_bools=True)
        spans: list[Span] = []
        for leaf in leaves:
            found = mention_spans(leaf, text)
            if not found:
                return []
            spans += found
        return spans
    if value is None:
        return []
    number = as_number(value) if not isinstance(value, str) or _NUMERIC.fullmatch(value) else None
    if number is not None:
        return [(s, e) for s, e, got in number_tokens(text) if abs(got - number) <= NUMBER_TOLERANCE]
    needle = str(value).strip()
    if len(needle) == 1 and needle.isalpha():
        return letter_spans(needle, text)
    spans = [span for form in _spellings(needle) for span in _phrase_spans(form, text)]
    date = iso_date(needle)
    if date is not None:
        spans += [m.span() for m in _date_pattern(date).finditer(text)]
    return spans


def letter_spans(letter: str, text: str) -> list[Span]:
    """Where `text` states a one-letter value (a section "B", a grade "A"): the capital letter standing alone, as the
    value is written; never the pronoun "I", nor an "A" that opens a sentence (the article). Read case-insensitively,
    "a" would be stated by every other sentence."""
    if not is_letter_value(letter):
        return []
    out = []
    for m in re.finditer(rf"(?<![\w'-]){re.escape(letter)}(?![\w'-])", text):
        opens = not text[:m.start()].strip() or text[:m.start()].rstrip()[-1] in ".!?\n"
        if not (letter == "A" and opens):
            out.append(m.span())
    return out


def is_letter_value(text: str) -> bool:
    """One capital letter a sentence can state as a value (a section "B"): not the pronoun "I"."""
    return len(text) == 1 and text.isalpha() and text.isupper() and text != "I"


def is_numeric_text(value: str) -> bool:
    """A string that is a number as written ("2", "$1,234.50"); not "nan" or "inf", which float() takes."""
    return bool(_NUMERIC.fullmatch(value))


def as_number(value: Any) -> float | None:
    """A number from a number or a numeric string ("$1,234.50" -> 1234.5); None otherwise (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().replace(",", "").lstrip("$"))
        except ValueError:
            return None
    return None


@lru_cache(maxsize=256)
def number_tokens(text: str) -> tuple[tuple[int, int, float], ...]:
    """Every number standing on its own in `text`: (start, end, value)."""
    out = []
    for m in _NUMBER.finditer(text):
        got = as_number(_UNIT_TAIL.sub("", m.group()))
        if got is not None:
            out.append((m.start(), m.end(), got))
    return tuple(out)


def count_words(text: str, without: list[Span] = ()) -> int:
    """How many alphabetic words `text` holds outside the spans `without`."""
    if without:
        keep, pos = [], 0
        for start, end in sorted(without):
            if start > pos:
                keep.append(text[pos:start])
            pos = max(pos, end)
        keep.append(text[pos:])
        text = " ".join(keep)
    return len(_WORD.findall(text))


def scalar_leaves(value: Any, keep_bools: bool = False) -> list[Any]:
    """The scalar leaves of a JSON-like value (dict values, list items), without None (and bools unless asked)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in scalar_leaves(v, keep_bools)]
    if isinstance(value, list):
        return [x for v in value for x in scalar_leaves(v, keep_bools)]
    if value is None or (isinstance(value, bool) and not keep_bools):
        return []
    return [value]


def iso_date(text: str) -> dt.date | None:
    """The date of an ISO date or date-time string, else None."""
    m = _ISO_DATE.fullmatch(text)
    if m is None:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


_DOUBLED_L = re.compile(r"(?<=\w{3}[aeiou])(ll|l)(?=(ed|ing|er|ation)\b)", re.IGNORECASE)


def _spellings(needle: str) -> list[str]:
    """`needle` and, when a word of two syllables or more doubles an l before -ed/-ing/-er ("cancelled", not
    "filled"), the other spelling."""
    other = _DOUBLED_L.sub(lambda m: "l" if len(m.group(1)) == 2 else "ll", needle)
    return [needle] if other == needle else [needle, other]


def _phrase_spans(needle: str, text: str) -> list[Span]:
    """Where `text` holds `needle` as whole words, case-insensitively, any run of spaces, underscores and hyphens
    matching any other (no letter or digit right before or after). Plain string search: values are many and
    mostly new, so compiling a regex for each would cost more than the search."""
    parts = [p.lower() for p in _SEPARATORS.split(needle) if p]
    low = _lower(text)
    if not parts or len(low) != len(text):  # lower-casing changed the length: let a regex keep the offsets right
        return [m.span() for m in _phrase(needle).finditer(text)] if parts else []
    spans: list[Span] = []
    at = low.find(parts[0])
    while at != -1:
        end = _match_rest(low, at + len(parts[0]), parts[1:])
        if end is not None and not (at and low[at - 1].isalnum()) and not (end < len(low) and low[end].isalnum()):
            spans.append((at, end))
        at = low.find(parts[0], at + 1)
    return spans


def _match_rest(low: str, pos: int, parts: list[str]) -> int | None:
    for part in parts:
        start = pos
        while pos < len(low) and (low[pos].isspace() or low[pos] in "_-"):
            pos += 1
        if pos == start or not low.startswith(part, pos):
            return None
        pos += len(part)
    return pos


@lru_cache(maxsize=64)
def _lower(text: str) -> str:
    return text.lower()


@lru_cache(maxsize=256)
def _phrase(needle: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in _SEPARATORS.split(needle) if p]
    return re.compile(r"(?<![^\W_])" + r"[\s_\-]+".join(parts) + r"(?![^\W_])", re.IGNORECASE)


@lru_cache(maxsize=1024)
def _date_pattern(date: dt.date) -> re.Pattern[str]:
    y, m, d = date.year, date.month, date.day
    name = _MONTHS[m - 1]
    names = {name, name[:3]} | ({"sept"} if m == 9 else set())
    longest_first = sorted(names, key=len, reverse=True)  # longest first, so "sept" is tried before "sep"
    month = "(?:" + "|".join(rf"{n}\.?" if len(n) < len(name) else n for n in longest_first) + ")"
    day = rf"0?{d}(?:st|nd|rd|th)?"
    # A day and month without the year count, unless another year follows them.
    year = rf"(?:,?\s*{y}(?!\d))?(?![\w])(?!\s*,?\s*\d{{4}})"
    forms = [
        rf"{y}-0?{m}-0?{d}(?!\d)",
        rf"{y}/0?{m}/0?{d}(?!\d)",
        rf"0?{m}/0?{d}/{y}(?!\d)",
        rf"{month}\s+{day}{year}",
        rf"{day}\s+(?:of\s+)?{month}{year}",
    ]
    return re.compile(r"(?<![\w/\-])(?:" + "|".join(forms) + ")", re.IGNORECASE)
