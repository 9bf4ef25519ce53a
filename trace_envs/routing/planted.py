"""Router accuracy on planted-deficit tasks, whose true capabilities are known: mine a planted training set, build a
router over the kept capabilities, and route fresh tasks. Used by the routing benchmark, the tests and `run`."""

from __future__ import annotations

from typing import Any

from trace_envs.datasets.planted import generate_planted, match_deficit
from trace_envs.mining.label import spec_target_tools
from trace_envs.routing.accuracy import accuracy


def planted_tasks(specs: list[Any], n_tasks: int, seed: int) -> list[tuple[str, set[str | None]]]:
    """Fresh planted tasks as (opening, acceptable choices): the kept capabilities that map to a deficit the task is
    exposed to, or {None} (the base model) when no kept capability fits it."""
    deficit = {s.name: match_deficit(s.family, spec_target_tools(s)) for s in specs}
    tasks = []
    for run in generate_planted(n_tasks, seed):
        exposed = set(run.meta["planted"]["exposed"])
        ok: set[str | None] = {name for name, d in deficit.items() if d in exposed}
        tasks.append((run.first_user_message(), ok or {None}))
    return tasks


def planted_accuracy(router: Any, specs: list[Any], n_tasks: int = 500, seed: int = 1000) -> float:
    return accuracy(router, planted_tasks(specs, n_tasks, seed))
