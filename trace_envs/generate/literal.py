"""Python source for JSON-like values, laid out for reading: what the `pyliteral` template filter prints.

Strings become `repr` literals (long ones split into implicitly concatenated pieces at spaces and newlines), containers
are indented with trailing commas when they do not fit on one line. The result is checked with `ast.literal_eval`,
which accepts literals only: whatever a spec holds, its rendering can only ever be data.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

WIDTH = 116
INDENT = "    "


class LiteralError(ValueError):
    """A value that has no faithful Python literal (a NaN, an object, a non-string key)."""


def pyliteral(value: Any, column: int = 0, width: int = WIDTH) -> str:
    """Python source for `value` (dicts with str keys, lists, str, int, float, bool, None) starting at `column`."""
    source = _render(value, column, 0, width)
    if ast.literal_eval(source) != value:
        raise LiteralError("value does not round-trip through its Python literal")
    return source


def _render(value: Any, column: int, depth: int, width: int) -> str:
    flat = _flat(value)
    if column + len(flat) <= width:
        return flat
    pad, inner = INDENT * depth, INDENT * (depth + 1)
    if isinstance(value, str):
        pieces = _split(value, width - len(inner) - 2)
        return "(\n" + "".join(f"{inner}{p}\n" for p in pieces) + f"{pad})"
    if isinstance(value, dict):
        lines = []
        for k, v in value.items():
            head = f"{inner}{_flat(k)}: "
            lines.append(head + _render(v, len(head), depth + 1, width) + ",")
        return "{\n" + "\n".join(lines) + f"\n{pad}}}"
    if isinstance(value, list):
        lines = [inner + _render(v, len(inner), depth + 1, width) + "," for v in value]
        return "[\n" + "\n".join(lines) + f"\n{pad}]"
    return flat


def _flat(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LiteralError(f"{value!r} has no JSON value")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise LiteralError("dict keys must be strings")
        return "{" + ", ".join(f"{_flat(k)}: {_flat(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    raise LiteralError(f"{type(value).__name__} has no JSON value")


def _string(text: str) -> str:
    """A double-quoted literal (JSON's escapes mean the same in Python); `repr` for text with lone surrogates, which
    JSON would leave raw and UTF-8 cannot encode."""
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        return repr(text)
    return json.dumps(text, ensure_ascii=False)


def _split(text: str, limit: int) -> list[str]:
    """`text` as repr pieces of at most about `limit` characters, cut after newlines and spaces where possible."""
    limit = max(20, limit)
    pieces: list[str] = []
    chunk = ""
    for part in _words(text):
        if chunk and len(_string(chunk + part)) > limit:
            pieces.append(_string(chunk))
            chunk = ""
        chunk += part
        if chunk.endswith("\n"):
            pieces.append(_string(chunk))
            chunk = ""
    if chunk or not pieces:
        pieces.append(_string(chunk))
    return pieces


def _words(text: str) -> list[str]:
    """Words with their trailing space or newline; runs longer than a line are cut so no piece overflows."""
    out, word = [], ""
    for ch in text:
        word += ch
        if ch in " \n" or len(word) >= 60:
            out.append(word)
            word = ""
    if word:
        out.append(word)
    return out
