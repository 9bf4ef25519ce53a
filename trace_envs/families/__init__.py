"""Capability families, one package each; `all_tasks()` and `get_task()` import the built-in families' tasks.

A family's package (`trace_envs/families/<family>/`) holds its task (`task.py`: params, env class, check; what
`gym.make` needs) and its detectors (`detector.py`: labeler, proposal rule, parameter inference; what the miner
needs), side by side. Importing the package imports its task only; the miner loads the detectors
(`trace_envs.mining.detector.all_detectors`). A user's family registers the same way from its own modules (see
`examples/custom_family/`).
"""

from __future__ import annotations

from typing import Any

from trace_envs.checks.clauses import Check
from trace_envs.families.task import (
    FamilyError,
    NoParams,
    Task,
    all_tasks,
    get_task,
    hint_of,
    register_task,
    unregister_task,
)


def env_check(family: str, roles: dict[str, str], params: dict[str, Any] | None = None, requests: int = 2) -> Check:
    """The check a generated env of `family` scores episodes with (see the family's task module for its bindings)."""
    task = get_task(family)
    missing = [r for r in task.roles if r not in roles]
    if missing:
        raise ValueError(f"family {family} needs roles {list(task.roles)}; missing {missing}")
    return task.check(roles, params or {}, requests=requests)


__all__ = [
    "FamilyError",
    "NoParams",
    "Task",
    "all_tasks",
    "env_check",
    "get_task",
    "hint_of",
    "register_task",
    "unregister_task",
]
