"""Example argument values taken from logs, bounded: the few real values a spec shows per argument.

Envs build their ids and default arguments from these examples, so one hostile or broken value in a log (a 1 MB
string where a 6-character reservation id belongs) would become every generated id. A value is a candidate only when
its JSON text is at most MAX_EXAMPLE_CHARS long (a longer one is dropped, not cut: a cut value is no real value), and
among the candidates an outlier, far longer than the argument's typical value, is dropped too.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

MAX_EXAMPLES = 3
# Real arguments in ../shared/data reach 996 characters of JSON (a `think` thought); ids are 6 to 25.
MAX_EXAMPLE_CHARS = 1_000
# Distinct candidates kept per argument, enough for a typical length to show.
MAX_CANDIDATES = 20
# An outlier is longer than OUTLIER_FACTOR times the typical (median) length plus OUTLIER_SLACK characters: a
# 6-character id field refuses 89 characters and more, free text of 236 characters refuses 1,009 and more.
OUTLIER_FACTOR = 4
OUTLIER_SLACK = 64


def example_key(value: Any) -> str:
    """The JSON text that identifies a value (and whose length is its size)."""
    return json.dumps(value, sort_keys=True, default=str)


class ExamplePool:
    """The bounded candidates of one argument, first seen first, deduplicated."""

    def __init__(self) -> None:
        self._candidates: dict[str, Any] = {}

    def add(self, value: Any) -> None:
        if len(self._candidates) >= MAX_CANDIDATES:
            return
        key = example_key(value)
        if len(key) <= MAX_EXAMPLE_CHARS:
            self._candidates.setdefault(key, value)

    def chosen(self) -> list[Any]:
        return choose_examples(self._candidates.values())


def within_bound(values: Any) -> list[Any]:
    """`values` (in their order, distinct) whose JSON text is at most MAX_EXAMPLE_CHARS long."""
    sized: dict[str, Any] = {}
    for value in values:
        key = example_key(value)
        if len(key) <= MAX_EXAMPLE_CHARS:
            sized.setdefault(key, value)
    return list(sized.values())


def choose_examples(values: Any, limit: int = MAX_EXAMPLES) -> list[Any]:
    """Up to `limit` of `values` (in their order, distinct) that are neither over MAX_EXAMPLE_CHARS nor outliers."""
    sized = {example_key(v): v for v in within_bound(values)}
    if not sized:
        return []
    # The lower median: of two values, one real and one hostile, the real one sets what is typical.
    typical = statistics.median_low(len(k) for k in sized)
    bound = OUTLIER_FACTOR * typical + OUTLIER_SLACK
    return [v for k, v in sized.items() if len(k) <= bound][:limit]
