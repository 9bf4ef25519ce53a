"""A source format of your own: your agent's logs, read through the same registry as the built-in formats.

The log this example reads is a JSON object like

    {"agent_log": 1, "episodes": [
        {"id": "refund-17", "passed": false, "steps": [
            {"user": "I want a refund for order 1042"},
            {"tool": "get_order", "args": {"order_id": 1042}, "output": {"status": "delivered"}},
            {"agent": "Your refund is on its way."}]}]}

Importing this module registers the format; `load_runs` (and so `mine`, `inspect` from Python) then picks such a file
by its content, wherever it is and whatever it is called:

    import custom_format  # noqa: F401  (registers "agent-log")
    from trace_envs.trajectories.loaders import load_runs
    runs = load_runs(["logs/"]).runs

A reader yields `(where, run record)` per run: a dict of `Run`'s fields but `run_id`; a problem is a `RunError` naming
where it is and which field, which the loader turns into the one-line `error: <file>: <where>: <what>`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from trace_envs.trajectories.formats import Record, RunError, SourceFormat, records, register_format


def sniff(document: Any) -> bool:
    """Cheap: look at the top-level keys only."""
    return isinstance(document, dict) and document.get("agent_log") == 1 and "episodes" in document


def _episode(ep: Any, i: int, file: str) -> tuple[str, dict[str, Any]]:
    where = f"episodes[{i}]"
    if not isinstance(ep, dict) or not isinstance(ep.get("id"), str):
        raise RunError(where, 'expected an episode with an "id" string')
    if not isinstance(ep.get("passed"), bool):
        raise RunError(f"{where} (episode {ep['id']})", 'expected "passed" to be true or false')
    messages: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for j, step in enumerate(ep.get("steps") or []):
        if not isinstance(step, dict):
            raise RunError(f"{where}.steps[{j}]", "expected a step object")
        if "tool" in step:
            call_id = f"call_{len(calls)}"
            args = step.get("args") or {}
            if not isinstance(args, dict):
                raise RunError(f"{where}.steps[{j}]", 'expected "args" to be an object')
            output = json.dumps(step.get("output"))
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": step["tool"], "arguments": json.dumps(args)}}]})
            messages.append({"role": "tool", "tool_call_id": call_id, "name": step["tool"], "content": output})
            calls.append({"id": call_id, "name": step["tool"], "arguments": args, "result": output,
                          "message_index": len(messages) - 2})
        else:
            role = "user" if "user" in step else "assistant"
            messages.append({"role": role, "content": step.get(role if role == "user" else "agent")})
    return where, {
        "source": "agent-log",
        "file": file,
        "task_id": ep["id"],
        "messages": messages,
        "tool_calls": calls,
        "reward": 1.0 if ep["passed"] else 0.0,
        "success": ep["passed"],
        "meta": {"domain": "refunds"},
    }


def read(document: dict[str, Any], path: Path, display: str) -> Iterable[Record]:
    return records(document["episodes"], lambda ep, i: _episode(ep, i, display))


FORMAT = register_format(
    SourceFormat(
        name="agent-log",
        description='agent logs (a JSON object {"agent_log": 1, "episodes": [...]})',
        sniff=sniff,
        read=read,
    )
)
