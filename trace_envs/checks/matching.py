"""Argument matchers: how a value in a check is compared with a value in a trace.

A matcher is plain JSON, so it lives in a spec file:

- a plain value: equal, with 1 == 1.0 and dicts/lists compared recursively;
- `{"$var": "name"}`: equal to the binding `name` (scenario values of a generated env);
- `{"$regex": "pattern"}`: the value's text fully matches the pattern (RE2 syntax: run in linear time, so a pattern
  from a spec cannot hang a step; a pattern RE2 rejects fails validation where the check is built);
- `{"$approx": 12.5, "$tol": 0.01}`: numeric within an absolute tolerance (default 0.01);
- `{"$in": [a, b]}`: equal to one of the listed values;
- `{"$any": true}`: present with any value;
- `{"$not": matcher}`: does not satisfy the inner matcher;
- `{"$mentions": value}`: a text that states the value (`language.values.text_mentions`: a summary naming the record).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import re2

from trace_envs.language.values import as_number, text_mentions

__all__ = ["BindingError", "compile_pattern", "matches", "pattern_problem", "regex_problems", "resolve",
           "values_equal"]

OPERATORS = ("$var", "$regex", "$approx", "$in", "$any", "$not", "$mentions")


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


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a rejected pattern is reported as a validation error, not logged to stderr


@lru_cache(maxsize=512)
def compile_pattern(pattern: str):
    """A pattern from a spec, compiled by RE2 (linear-time matching); raises `re2.error` when RE2 rejects it."""
    return re2.compile(pattern, options=_RE2_OPTIONS)


def pattern_problem(pattern: str) -> str | None:
    """Why RE2 rejects `pattern` (e.g. a lookbehind or a backreference), or None when it compiles."""
    try:
        compile_pattern(pattern)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        detail = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        return f"pattern {pattern!r} is not supported by the linear-time engine RE2 ({detail})"
    return None


def regex_problems(value: Any, where: str) -> list[str]:
    """Every `$regex` matcher inside `value` (a matcher or a structure of matchers) that RE2 rejects, as
    "<where>.<path>: <why>" lines."""
    out: list[str] = []
    if isinstance(value, dict):
        if value and next(iter(value)) == "$regex":
            problem = pattern_problem(str(value["$regex"]))
            if problem:
                out.append(f"{where}: $regex {problem}")
            return out
        for k, v in value.items():
            out += regex_problems(v, where if str(k).startswith("$") else f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += regex_problems(v, f"{where}[{i}]")
    return out


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
            return compile_pattern(str(matcher["$regex"])).fullmatch(text) is not None
        if op == "$approx":
            target = as_number(resolve(matcher["$approx"], bindings))
            got = as_number(actual)
            tol = float(matcher.get("$tol", 0.01))
            return target is not None and got is not None and abs(target - got) <= tol
        if op == "$in":
            options = resolve(matcher["$in"], bindings)
            return isinstance(options, list) and any(matches(o, actual, bindings) for o in options)
        if op == "$not":
            return not matches(matcher["$not"], actual, bindings)
        if op == "$mentions":
            return isinstance(actual, str) and text_mentions(resolve(matcher["$mentions"], bindings), actual)
    if isinstance(matcher, dict) and isinstance(actual, dict):
        return matcher.keys() == actual.keys() and all(matches(matcher[k], actual[k], bindings) for k in matcher)
    if isinstance(matcher, list) and isinstance(actual, list):
        return len(matcher) == len(actual) and all(matches(m, a, bindings) for m, a in zip(matcher, actual))
    return values_equal(matcher, actual)
