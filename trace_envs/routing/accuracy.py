"""How often a router picks an acceptable capability for a task."""

from __future__ import annotations

from typing import Any


def accuracy(router: Any, tasks: list[tuple[str, set[str | None]]]) -> float:
    """Share of tasks (opening, acceptable choices) the router gets right."""
    if not tasks:
        return 0.0
    return sum(router.route(text).choice in ok for text, ok in tasks) / len(tasks)
