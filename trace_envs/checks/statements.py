"""Whether an agent message can tell the user anything: not a paste of tool results, not a dump of candidate values.

"Told the user" clauses pay only for a value stated in a sentence of an agent message that passes this audit, so
reading every record and pasting it back, or listing every number, earns nothing. A message is disqualified when it

- pastes: holds a JSON-like fragment (`{"`, `{'`, `":`, `[{`, `}]`) or repeats 60 or more characters verbatim from
  the text of an earlier tool result;
- lists many candidates: states more than `max(4, 2 × values asked for)` distinct scalar values taken from earlier
  successful tool results that the user had not said first (ids, names, enum values, numbers; booleans and strings
  under 2 characters are skipped), or more than 12 distinct numbers of any origin.

And a value is not told by a message that lists it among its alternatives: at least `max(3, values asked for + 2)`
distinct values of one field of the tool results ("I see three reservations: DF89BM, COVE6R and IIHXDG. Which one
...?" tells none of them). A field is a path of keys in a result, list positions and id-like keys left out, so every
flight's `prices.economy` is one field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from trace_envs.checks.refs import show_value
from trace_envs.checks.trace import ActionTrace, parse_result
from trace_envs.language.values import as_number, count_words, mention_spans, number_tokens, scalar_leaves, text_mentions

PASTE_RUN = 60
MAX_NUMBERS = 12
MIN_CANDIDATES = 4
CANDIDATES_PER_VALUE = 2
MIN_ALTERNATIVES = 3
SENTENCE_WORDS = 3
MAX_OCCURRENCES = 100

_JSON_FRAGMENT = re.compile(r"\{\s*[\"']|\"\s*:|\[\s*\{|\}\s*\]")


class MessageAudit(BaseModel):
    """What one agent message is, for the "told the user" clauses.

    `number` counts agent messages from 1; `step` is its index in the trace; `paste` says why it is a paste (None
    when it is not); `numbers` counts its distinct numbers; `candidates` its distinct values from earlier tool results
    that the user had not said first; `alternatives` maps each of those values (as `value_key`) to the most values of
    one of its fields the message states, and the field."""

    step: int
    number: int
    text: str
    paste: str | None = None
    numbers: int = 0
    candidates: int = 0
    alternatives: dict[str, tuple[int, str]] = {}

    def flaw(self, n_values: int, value: Any = None) -> str | None:
        """Why the message communicates nothing when `n_values` values are asked for, or None when it may; with
        `value`, also why it does not tell that value (it lists it among its alternatives)."""
        if self.paste:
            return self.paste
        if self.numbers > MAX_NUMBERS:
            return f"states more than {MAX_NUMBERS} distinct numbers"
        budget = candidate_budget(n_values)
        if self.candidates > budget:
            return f"lists {self.candidates} values from tool results (at most {budget})"
        if value is not None:
            most = max(MIN_ALTERNATIVES, n_values + 2)
            for leaf in scalar_leaves(value) if isinstance(value, (dict, list)) else [value]:
                count, field = self.alternatives.get(value_key(leaf), (0, ""))
                if count >= most:
                    return f"lists {count} values of {field}, {show_value(leaf)} among them"
        return None


def candidate_budget(n_values: int) -> int:
    """How many distinct tool-result values a message may state when `n_values` values are asked for."""
    return max(MIN_CANDIDATES, CANDIDATES_PER_VALUE * n_values)


def in_a_sentence(value: Any, text: str) -> bool:
    """`text` states `value` with at least 3 alphabetic words besides the value itself."""
    spans = mention_spans(value, text)
    return bool(spans) and count_words(text, spans) >= SENTENCE_WORDS


def audit_messages(trace: ActionTrace) -> list[MessageAudit]:
    """The audit of every agent message of `trace`, in order."""
    out: list[MessageAudit] = []
    sources: list[str] = []
    candidates: dict[Any, Any] = {}  # normalised key -> the value as the tool returned it
    fields: dict[Any, set[str]] = {}  # normalised key -> the fields it was found at
    user_said: list[str] = []
    for i, step in enumerate(trace.steps):
        if step.kind == "call":
            if step.result is not None:
                sources.append(result_text(step.result))
            if not step.error:  # an env's read returns the record as JSON text: its values are the leaves
                for field, leaf in _fields_and_leaves(parse_result(step.result)):
                    if not (isinstance(leaf, str) and len(leaf.strip()) < 2):
                        candidates.setdefault(value_key(leaf), leaf)
                        fields.setdefault(value_key(leaf), set()).add(field)
        elif step.kind == "user" and step.text:
            user_said.append(step.text)
        elif step.kind == "say":
            text = step.text or ""
            audit = MessageAudit(step=i, number=len(out) + 1, text=text)
            audit.paste = _paste(text, sources)
            audit.numbers = _distinct_numbers(text)
            if audit.paste is None and audit.numbers <= MAX_NUMBERS and text:
                heard = "\n".join(user_said)
                stated = [k for k, leaf in candidates.items() if text_mentions(leaf, text) and not text_mentions(leaf, heard)]
                audit.candidates = len(stated)
                audit.alternatives = _alternatives(stated, fields)
            out.append(audit)
    return out


def _distinct_numbers(text: str) -> int:
    """How many distinct numbers `text` states, counted up to one past the limit (a dump of 30,000 numbers needs no
    more to be told apart from an answer)."""
    seen: set[float] = set()
    for _, _, value in number_tokens(text) if text else ():
        seen.add(round(value, 6))
        if len(seen) > MAX_NUMBERS:
            break
    return len(seen)


def result_text(result: Any) -> str:
    """A tool result as the agent saw it: its text, or its JSON."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def value_key(leaf: Any) -> str:
    """A scalar's key for telling values apart: numbers by value, strings case-insensitively."""
    number = as_number(leaf) if not isinstance(leaf, str) else None
    return f"n:{round(number, 6)}" if number is not None else f"s:{str(leaf).strip().lower()}"


_ID_LIKE = re.compile(r"\d")


def _fields_and_leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(field, leaf) for every scalar leaf: the field is the path of keys, list positions and keys holding a digit
    (ids: `variants.8069050545.price`) left out, so the alternatives of one field share it."""
    if isinstance(value, dict):
        return [x for k, v in value.items()
                for x in _fields_and_leaves(v, path if _ID_LIKE.search(str(k)) else f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [x for v in value for x in _fields_and_leaves(v, path)]
    if value is None or isinstance(value, bool):
        return []
    return [(path or "(result)", value)]


def _alternatives(stated: list[str], fields: dict[str, set[str]]) -> dict[str, tuple[int, str]]:
    """For each stated value, the most stated values one of its fields holds, and that field."""
    per_field: dict[str, int] = {}
    for k in stated:
        for field in fields.get(k, ()):
            per_field[field] = per_field.get(field, 0) + 1
    out = {}
    for k in stated:
        best = max(((per_field[f], f) for f in fields.get(k, ())), default=(0, ""))
        if best[0] >= MIN_ALTERNATIVES:
            out[k] = best
    return out


def _paste(text: str, sources: list[str]) -> str | None:
    if _JSON_FRAGMENT.search(text):
        return "pastes a tool result (JSON)"
    if any(_shares_run(text, src, PASTE_RUN) for src in sources):
        return f"pastes a tool result ({PASTE_RUN}+ characters verbatim)"
    return None


def _shares_run(text: str, source: str, n: int) -> bool:
    """Whether `text` and `source` share a substring of `n` or more characters.

    Any such run covers one of `source`'s blocks of n // 2 characters aligned at multiples of n // 2, so only those
    blocks are searched for in `text`, then grown both ways. A block found more than MAX_OCCURRENCES times in `text`
    counts as pasted (the message repeats a piece of a tool result over and over), which bounds the work."""
    if len(text) < n or len(source) < n:
        return False
    block = n // 2
    for start in range(0, len(source) - block + 1, block):
        piece = source[start : start + block]
        at, seen = text.find(piece), 0
        while at != -1:
            seen += 1
            if seen > MAX_OCCURRENCES:
                return True
            left = 0
            while left < min(at, start) and text[at - left - 1] == source[start - left - 1]:
                left += 1
            right = block
            while at + right < len(text) and start + right < len(source) and text[at + right] == source[start + right]:
                right += 1
            if left + right >= n:
                return True
            at = text.find(piece, at + 1)
    return False
