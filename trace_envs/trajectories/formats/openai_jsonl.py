"""OpenAI-messages runs: one `{"task_id", "messages", "reward" | "success", "tools"?, "trial"?, "domain"?, "policy"?,
"instruction"?, "ground_truth"?, "meta"?}` object per JSONL line, or a JSON list of them, or a single one.

The JSONL form streams: the loader reads and offers one line at a time. Claimed when the first object has `messages`
(for a JSONL file, any of its first five lines' objects, so that a bad first run still gets its own located error).
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
    normalize_tools,
    openai_messages,
    records,
    reward_success,
    task_id_text,
    trial,
)
from trace_envs.trajectories.formats.registry import SourceFormat, register_format


def run_record(obj: Any, where_base: str, file: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise RunError(where_base, f"expected a run object, got {got(obj)}")
    task_id = obj.get("task_id")
    where = f"{where_base} (task {task_id})" if where_base.startswith("run index") else where_base
    task_id = task_id_text(task_id, where)
    msgs = message_list(obj.get("messages"), where, "messages")
    reward, success = reward_success(obj.get("reward"), obj.get("success"), where)
    messages, joiner = openai_messages(msgs, where, "messages", copy=True)
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, (list, dict)):
        raise RunError(where, f'expected "tools" to be a list of tool schemas, got {got(tools)}')
    meta = dict(obj["meta"]) if isinstance(obj.get("meta"), dict) else {}
    if isinstance(obj.get("domain"), str) and "domain" not in meta:
        meta["domain"] = obj["domain"]
    if joiner.bad_arguments:
        meta["undecodable_arguments"] = joiner.bad_arguments
    policy = obj.get("policy") if isinstance(obj.get("policy"), str) else first_system(messages)
    instruction = obj.get("instruction")
    return {
        "source": "openai-jsonl",
        "file": file,
        "task_id": task_id,
        "trial": trial(obj.get("trial"), where),
        "messages": messages,
        "tool_calls": joiner.calls,
        "reward": reward,
        "success": success,
        "policy": policy,
        "ground_truth": ground_truth(obj.get("ground_truth"), where, "ground_truth"),
        "tools": normalize_tools(tools),
        "instruction": instruction if isinstance(instruction, str) else None,
        "meta": meta,
        "_where": where,
    }


def _located(obj: Any, where_base: str, file: str) -> tuple[str, dict[str, Any]]:
    rec = run_record(obj, where_base, file)
    return rec.pop("_where"), rec


def sniff_document(document: Any) -> bool:
    if isinstance(document, dict):
        return "messages" in document
    first = next((x for x in document if isinstance(x, dict)), None) if isinstance(document, list) else None
    return first is not None and "messages" in first


def read_document(document: Any, path: Path, display: str) -> Iterable[Record]:
    if isinstance(document, dict):
        return records([document], lambda item, i: _located(item, "line 1", display))
    return records(document, lambda item, i: _located(item, f"run index {i}", display))


def sniff_line(obj: Any) -> bool:
    return isinstance(obj, dict) and "messages" in obj


def read_line(obj: Any, where: str, display: str) -> dict[str, Any]:
    return _located(obj, where, display)[1]


FORMAT = register_format(
    SourceFormat(
        name="openai-jsonl",
        description='OpenAI-messages JSONL (one {"task_id", "messages", "reward" or "success"} object per line)',
        sniff=sniff_document,
        read=read_document,
        sniff_line=sniff_line,
        read_line=read_line,
    )
)
