"""tau-bench historical trajectories: a JSON list of `{task_id, trial, reward, info: {task: {...}}, traj}`.

`traj` is already OpenAI chat form (assistant `tool_calls[].function.arguments` as JSON strings, `tool` replies with
`tool_call_id`); a reply whose text starts with "Error" is an error. Claimed when the first object of the list has
`traj`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from trace_envs.trajectories.formats.common import (
    Record,
    RunError,
    first_system,
    got,
    ground_truth,
    message_list,
    openai_messages,
    records,
    reward_success,
    task_id_text,
    trial,
)
from trace_envs.trajectories.formats.registry import SourceFormat, register_format


def _first_object(document: Any) -> dict[str, Any] | None:
    return next((x for x in document if isinstance(x, dict)), None) if isinstance(document, list) else None


def sniff(document: Any) -> bool:
    first = _first_object(document)
    return first is not None and "traj" in first


def run_record(item: Any, idx: int, file: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(item, dict):
        raise RunError(f"run index {idx}", f"expected a run object, got {got(item)}")
    task_id = item.get("task_id")
    where = f"run index {idx} (task {task_id})"
    task_id = task_id_text(task_id, where)
    traj = message_list(item.get("traj"), where, "traj")
    reward, success = reward_success(item.get("reward"), None, where)
    info = item.get("info")
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise RunError(where, f'expected "info" to be an object, got {got(info)}')
    task = info.get("task") or {}
    if not isinstance(task, dict):
        raise RunError(where, f'expected "info.task" to be an object, got {got(task)}')
    messages, joiner = openai_messages(traj, where, "traj", copy=False)
    meta: dict[str, Any] = {}
    if task.get("user_id") is not None:
        meta["user_id"] = task["user_id"]
    if task.get("outputs"):
        meta["outputs"] = task["outputs"]
    if info.get("reward_info") is None:
        meta["reward_info_missing"] = True
    if joiner.bad_arguments:
        meta["undecodable_arguments"] = joiner.bad_arguments
    instruction = task.get("instruction")
    return where, {
        "source": "tau-bench",
        "file": file,
        "task_id": task_id,
        "trial": trial(item.get("trial"), where),
        "messages": messages,
        "tool_calls": joiner.calls,
        "reward": reward,
        "success": success,
        "policy": first_system(messages),
        "ground_truth": ground_truth(task.get("actions"), where, "info.task.actions"),
        "instruction": instruction if isinstance(instruction, str) else None,
        "meta": meta,
    }


def read(document: list[Any], path: Path, display: str) -> Iterable[Record]:
    return records(document, lambda item, i: run_record(item, i, display))


FORMAT = register_format(
    SourceFormat(
        name="tau-bench",
        description='tau-bench trajectories (a JSON list of runs with "traj")',
        sniff=sniff,
        read=read,
    )
)
