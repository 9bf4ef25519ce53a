"""Record-backed tools shared by the family templates: a seeded set of records keyed by the target's id argument,
read tools that return them and write tools that change them, shaped like the target domain's real results."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np

from trace_envs.runtime.records import example_for, like_value, unique_ids
from trace_envs.runtime.base import TraceEnv
from trace_envs.runtime.scenario import ToolError
from trace_envs.spec.model import CapabilitySpec, ToolSpec


def key_example(spec: CapabilitySpec, key: str) -> str:
    """An example value of the key argument, from any tool's schema examples or result, else a generic id."""
    for tool in spec.tools:
        schema = tool.properties.get(key)
        if isinstance(schema, dict) and schema.get("examples"):
            return str(schema["examples"][0])
    for tool in spec.tools:
        if isinstance(tool.result_example, dict) and isinstance(tool.result_example.get(key), str):
            return tool.result_example[key]
    return "ID1234"


def make_records(spec: CapabilitySpec, read: str, key: str, n: int, rng: np.random.Generator) -> dict[str, dict]:
    """`n` records shaped like `read`'s real result, each with a fresh id under `key`."""
    example = spec.tool(read).result_example
    base = example if isinstance(example, dict) else {}
    records: dict[str, dict] = {}
    for rid in unique_ids(key_example(spec, key), n, rng):
        record = like_value(base, rng)
        record[key] = rid
        records[rid] = record
    return records


def call(name: str, **arguments: Any) -> str:
    """An action string for one tool call (what an oracle emits)."""
    return json.dumps({"name": name, "arguments": arguments}, sort_keys=True)


def fill_arguments(tool: ToolSpec, fixed: dict[str, Any]) -> dict[str, Any]:
    """Arguments for `tool`: the `fixed` ones plus each other required argument's first example value."""
    args = dict(fixed)
    for name in tool.required:
        if name not in args:
            schema = tool.properties.get(name, {})
            args[name] = copy.deepcopy(example_for(schema if isinstance(schema, dict) else {}, name))
    return args


def new_state(records: dict[str, dict]) -> dict[str, Any]:
    return {"records": records, "reads": [], "writes": []}


def read_record(state: dict[str, Any], key: str, args: dict[str, Any]) -> str:
    """The record as the tool's JSON reply: serialising is the snapshot (later writes do not change what was read),
    and an order of magnitude cheaper than copying the record first."""
    rid = args.get(key)
    record = state["records"].get(rid) if isinstance(rid, str) else None
    if record is None:
        raise ToolError(f"{key} {rid!r} not found")
    state["reads"].append(rid)
    return json.dumps(record)


def write_record(state: dict[str, Any], tool: str, key: str, args: dict[str, Any]) -> dict[str, Any]:
    rid = args.get(key)
    if not isinstance(rid, str) or rid not in state["records"]:
        raise ToolError(f"{key} {rid!r} not found")
    state["writes"].append({"tool": tool, "args": copy.deepcopy(args)})
    return {"success": True, key: rid, "action": tool}


def write_and_echo(spec: CapabilitySpec, state: dict[str, Any], name: str, key: str, args: dict[str, Any]) -> Any:
    """Record a write and answer like the target does: the updated record when its real result is one, else a
    receipt."""
    receipt = write_record(state, name, key, args)
    example = spec.tool(name).result_example
    if not (isinstance(example, dict) and key in example):
        return receipt
    record = state["records"][args[key]]
    for arg, value in args.items():
        if arg != key and arg in record and type(record[arg]) is type(value) and not isinstance(value, (dict, list)):
            record[arg] = value
    for field, value in example.items():
        record.setdefault(field, copy.deepcopy(value))
    return copy.deepcopy(record)


def canonical_json(value: Any) -> str:
    """Arguments as the user states them in a request: JSON with sorted keys (deterministic text)."""
    return json.dumps(value, sort_keys=True)


DEFAULT_HANDOFF_RESULT = "Transfer successful"


class RecordEnv(TraceEnv):
    """A TraceEnv whose tools act on records keyed by the spec's `key` role: the `read` tool returns the record, any
    write tool records the write and answers like the target, the `handoff` tool records the transfer (and, being a
    terminal tool in the handoff family, ends the episode). Anything else is not available."""

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        roles = self.SPEC.roles
        key = roles["key"]
        if name == roles.get("read"):
            return read_record(state, key, args)
        if name == roles.get("handoff"):
            state.setdefault("handoffs", []).append(dict(args))
            example = self.SPEC.tool(name).result_example
            return example if isinstance(example, str) and example else DEFAULT_HANDOFF_RESULT
        if self._kinds.get(name) == "write" and key in args:
            return write_and_echo(self.SPEC, state, name, key, args)
        raise ToolError(f"{name} is not available in this environment")
