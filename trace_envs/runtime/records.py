"""Seeded synthesis of records and ids shaped like the target domain's real tool results.

Generated envs imitate the target's record shapes (the DomainProfile's result examples) so a policy trained on them
sees the same keys and value formats it will meet in the target. Values that look like identifiers, dates or amounts
are perturbed; short words (enums such as a cabin class or a status) are kept.
"""

from __future__ import annotations

import re
import string
from typing import Any

import numpy as np

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(.*)$")
_UPPER, _LOWER, _DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits


def like_id(example: str, rng: np.random.Generator) -> str:
    """A new identifier with the example's shape: letters stay letters (same case), digits stay digits."""
    has_digit = _has_digit(example)
    # lower-case letters are drawn in a code (a1b2), kept in words (james_lee_123)
    lower = has_digit and not ("_" in example or "-" in example)
    # One draw per character class for the whole id: a call to the generator per character dominated reset.
    digits, letters = rng.integers(10, size=len(example)).tolist(), rng.integers(26, size=len(example)).tolist()
    out = []
    for i, ch in enumerate(example):
        if ch.isdigit():
            out.append(_DIGITS[digits[i]])
        elif ch.isupper():
            out.append(_UPPER[letters[i]])
        elif lower and ch.islower():
            out.append(_LOWER[letters[i]])
        else:
            out.append(ch)
    return "".join(out)


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def like_value(example: Any, rng: np.random.Generator, depth: int = 0) -> Any:
    """A value shaped like `example`: same JSON types and keys, perturbed ids, dates and numbers."""
    if depth > 6:
        return example
    if isinstance(example, bool):
        return bool(rng.integers(2))
    if isinstance(example, int):
        return int(max(0, round(example * float(rng.uniform(0.5, 1.5)))))
    if isinstance(example, float):
        return round(example * float(rng.uniform(0.5, 1.5)), 2)
    if isinstance(example, str):
        m = _DATE.match(example)
        if m:
            day = 1 + int(rng.integers(28))
            return f"{m.group(1)}-{m.group(2)}-{day:02d}{m.group(4)}"
        return like_id(example, rng) if _has_digit(example) else example
    if isinstance(example, list):
        return [like_value(item, rng, depth + 1) for item in example[:3]]
    if isinstance(example, dict):
        return {str(k): like_value(v, rng, depth + 1) for k, v in example.items()}
    return example


def fixed_positions(examples: list[str]) -> str | None:
    """A mask of the characters every example shares at the same position ('#W.......' for retail order ids), or
    None when the examples differ in length, are fewer than two, or are all the same (a mask fixing every character
    would leave no fresh id to draw)."""
    if len(examples) < 2 or len({len(e) for e in examples}) != 1 or len(set(examples)) == 1:
        return None
    return "".join(c if all(e[i] == c for e in examples) else "." for i, c in enumerate(examples[0]))


def unique_ids(example: str, n: int, rng: np.random.Generator, mask: str | None = None) -> list[str]:
    """`n` distinct ids shaped like `example` (never equal to it, so a memorised real id never matches); characters
    `mask` fixes (see `fixed_positions`) are kept, as every real id has them."""
    seen: set[str] = {example}
    out: list[str] = []
    while len(out) < n:
        candidate = like_id(example, rng)
        if mask is not None and len(mask) == len(candidate):
            candidate = "".join(m if m != "." else c for m, c in zip(mask, candidate))
        if candidate == example and not _has_digit(example):
            candidate = f"{example}_{len(out) + 1}"
        if candidate not in seen:
            seen.add(candidate)
            out.append(candidate)
    return out


def example_for(schema: dict[str, Any], name: str) -> Any:
    """The first example value the schema of argument `name` carries, else a type-appropriate placeholder."""
    examples = schema.get("examples") or []
    if examples:
        return examples[0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(kind or "", f"{name}_1")


def get_path(node: Any, path: str) -> tuple[bool, Any]:
    """The value at a dotted path (`payment_history.0.amount`: keys and list indexes), and whether it exists."""
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def set_path(record: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at a dotted path, creating the objects and list items on the way."""
    parts = path.split(".")
    node: Any = record
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        fresh: Any = value if last else ([] if parts[i + 1].isdigit() else {})
        if isinstance(node, list):
            if not part.isdigit():
                raise ValueError(f"path {path!r}: {part!r} indexes a list")
            index = int(part)
            while len(node) <= index:
                node.append({} if not last else None)
            if last or not isinstance(node[index], (dict, list)):
                node[index] = fresh
            node = node[index]
        else:
            if last or not isinstance(node.get(part), (dict, list)):
                node[part] = fresh
            node = node[part]
