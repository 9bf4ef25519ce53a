"""Argument matchers: how a value in a check is compared with a value in a trace.

A matcher is plain JSON, so it lives in a spec file:

- a plain value: equal, with 1 == 1.0 and dicts/lists compared recursively;
- `{"$var": "name"}`: equal to the binding `name` (scenario values of a generated env);
- `{"$regex": "pattern"}`: the value's text fully matches the pattern;
- `{"$approx": 12.5, "$tol": 0.01}`: numeric within an absolute tolerance (default 0.01);
- `{"$in": [a, b]}`: equal to one of the listed values;
- `{"$any": true}`: present with any value;
- `{"$not": matcher}`: does not satisfy the inner matcher.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

MAX_REGEX_INPUT = 10_000

OPERATORS = ("$var", "$regex", "$approx", "$in", "$any", "$not")


class BindingError(KeyError):
    """A check refers to `$var` that the scenario did not bind."""


def is_operator(value: Any) -> bool:
    return isinstance(value, dict) and len(value) >= 1 and next(iter(value)) in OPERATORS


def resolve(value: Any, bindings: dict[str, Any]) -> Any:
    """Replace `{"$var": name}` by its bound value (recursively); leave other matchers as they are."""
    if isinstance(value, dict):
        if "$var" in value and len(value) == 1:
            name = value["$var"]
            if name not in bindings:
                raise BindingError(f"check refers to ${name}, which the scenario does not bind")
            return bindings[name]
        return {k: resolve(v, bindings) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, bindings) for v in value]
    return value


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _as_number(value: Any) -> float | None:
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


def values_equal(expected: Any, actual: Any) -> bool:
    """Structural equality where numbers compare by value (1 == 1.0) and bools stay bools."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(float(expected), float(actual), rel_tol=0.0, abs_tol=1e-9)
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(values_equal(expected[k], actual[k]) for k in expected)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(values_equal(e, a) for e, a in zip(expected, actual))
    return type(expected) is type(actual) and expected == actual


def matches(matcher: Any, actual: Any, bindings: dict[str, Any]) -> bool:
    """Whether `actual` satisfies `matcher` (see the module docstring)."""
    if isinstance(matcher, dict) and matcher and next(iter(matcher)) in OPERATORS:
        op = next(iter(matcher))
        if op == "$var":
            return values_equal(resolve(matcher, bindings), actual)
        if op == "$any":
            return True
        if op == "$regex":
            text = actual if isinstance(actual, str) else str(actual)
            return _compiled(str(matcher["$regex"])).fullmatch(text[:MAX_REGEX_INPUT]) is not None
        if op == "$approx":
            target = _as_number(resolve(matcher["$approx"], bindings))
            got = _as_number(actual)
            tol = float(matcher.get("$tol", 0.01))
            return target is not None and got is not None and abs(target - got) <= tol
        if op == "$in":
            options = resolve(matcher["$in"], bindings)
            return isinstance(options, list) and any(matches(o, actual, bindings) for o in options)
        if op == "$not":
            return not matches(matcher["$not"], actual, bindings)
    if isinstance(matcher, dict) and isinstance(actual, dict):
        return matcher.keys() == actual.keys() and all(matches(matcher[k], actual[k], bindings) for k in matcher)
    if isinstance(matcher, list) and isinstance(actual, list):
        return len(matcher) == len(actual) and all(matches(m, a, bindings) for m, a in zip(matcher, actual))
    return values_equal(matcher, actual)


def text_mentions(value: Any, text: str) -> bool:
    """Whether an agent message communicates `value`: the text as a whole word (case-insensitive), or a number in any
    common format standing on its own (digits inside an id such as "JG7FMM" do not count)."""
    number = None if isinstance(value, str) and not _looks_numeric(value) else _as_number(value)
    if number is not None:
        for token in _NUMBER.findall(text):
            got = _as_number(token)
            if got is not None and abs(got - number) <= 0.005:
                return True
        return False
    needle = str(value).strip()
    if not needle:
        return False
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text, re.IGNORECASE) is not None


_NUMBER = re.compile(r"(?<![\w.])-?\$?\d[\d,]*(?:\.\d+)?(?![\w]|\.\d)")


def _looks_numeric(text: str) -> bool:
    return re.fullmatch(r"\s*-?\$?\d[\d,]*(?:\.\d+)?\s*", text) is not None
