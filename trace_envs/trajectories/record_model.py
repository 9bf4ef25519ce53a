"""What the runs say about the domain's records: real examples to build scenarios from, the invariants they satisfy,
what each write does to a record, and the current time the policy states.

Generated envs build their records from these real results (fresh ids, the same dates, amounts and structure), so the
records keep every relation the real ones have; the learned invariants let the generator reject a record it broke.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from typing import Any

from trace_envs.trajectories.invariants import Invariant, learn_invariants
from trace_envs.trajectories.models import Run
from trace_envs.trajectories.results import flatten
from trace_envs.jsontext import shared_loads

MAX_POOL = 50
MAX_RECORD_CHARS = 6_000
_NOW = re.compile(r"current (?:time|date)(?: and time)? is\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2})?))?", re.I)


def policy_now(policy: str | None) -> str | None:
    """The current time a policy states ("The current time is 2024-05-15 15:00:00 EST." -> "2024-05-15T15:00:00")."""
    m = _NOW.search(policy or "")
    if not m:
        return None
    time = m.group(2) or "00:00:00"
    return f"{m.group(1)}T{time if len(time) == 8 else time + ':00'}"


def _record(raw: str | None) -> dict[str, Any] | None:
    if not raw or len(raw) > MAX_RECORD_CHARS or not raw.lstrip().startswith("{"):
        return None
    try:
        data = shared_loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def record_pools(runs: list[Run], kinds: dict[str, str]) -> tuple[dict[str, list[dict]], dict[str, list[list[dict]]]]:
    """Per read tool: up to MAX_POOL distinct real records (first seen first), and the records each run read."""
    pools: dict[str, dict[str, dict]] = defaultdict(dict)
    groups: dict[str, list[list[dict]]] = defaultdict(list)
    for run in runs:
        per_run: dict[str, list[dict]] = defaultdict(list)
        for call in run.agent_calls:
            if kinds.get(call.name) != "read" or call.error:
                continue
            record = _record(call.result)
            if record is None:
                continue
            key = json.dumps(record, sort_keys=True)
            pool = pools[call.name]
            if key not in pool and len(pool) < MAX_POOL:
                pool[key] = record
            per_run[call.name].append(pool.get(key, record))
        for tool, records in per_run.items():
            groups[tool].append(records)
    return {t: list(p.values()) for t, p in pools.items()}, dict(groups)


def write_effects(runs: list[Run], kinds: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per write tool: the top-level fields every observed call set to the same constant value, whatever its
    arguments (a cancellation sets `status` to `cancelled`), from the record read before it and the one it returned."""
    seen: dict[str, Counter] = defaultdict(Counter)
    observed: Counter = Counter()
    for run in runs:
        last: dict[str, dict] = {}
        for call in run.agent_calls:
            kind = kinds.get(call.name)
            record = _record(call.result) if not call.error else None
            if kind == "read" and record is not None:
                for value in call.arguments.values():
                    if isinstance(value, str):
                        last[value] = record
            elif kind == "write" and record is not None:
                before = next((last[v] for v in call.arguments.values() if isinstance(v, str) and v in last), None)
                if before is None:
                    continue
                observed[call.name] += 1
                for field, value in record.items():
                    if field in call.arguments or isinstance(value, (dict, list)) or before.get(field) == value:
                        continue
                    seen[call.name][(field, json.dumps(value))] += 1
                for value in call.arguments.values():
                    if isinstance(value, str):
                        last[value] = record
    effects: dict[str, dict[str, Any]] = {}
    for tool, counts in seen.items():
        for (field, value), n in counts.items():
            if n >= 2 and n == observed[tool]:
                effects.setdefault(tool, {})[field] = json.loads(value)
    return effects


def argument_sources(runs: list[Run], kinds: dict[str, str], min_share: float = 0.6) -> dict[str, dict[str, str]]:
    """Per write tool: the arguments whose value, in passed runs, was a field of the record the write was about (the
    one read with the same key): `refund_order.amount` <- `total`. An env takes these from the record, so the agent
    must read them rather than be handed them by the user."""
    hits: dict[tuple[str, str], Counter] = defaultdict(Counter)
    uses: Counter = Counter()
    for run in runs:
        if not run.success:
            continue
        last: dict[str, dict[str, Any]] = {}
        for call in run.agent_calls:
            kind = kinds.get(call.name)
            if kind == "read" and not call.error:
                record = _record(call.result)
                if record is not None:
                    for value in call.arguments.values():
                        if isinstance(value, str):
                            last[value] = flatten(record)
            elif kind == "write":
                flat = next((last[v] for v in call.arguments.values() if isinstance(v, str) and v in last), None)
                if flat is None:
                    continue
                for arg, value in call.arguments.items():
                    if isinstance(value, (dict, list, bool)) or value is None:
                        continue
                    uses[(call.name, arg)] += 1
                    for path, field_value in flat.items():
                        if field_value == value and not (isinstance(value, str) and value in last):
                            hits[(call.name, arg)][path] += 1
    out: dict[str, dict[str, str]] = {}
    for (tool, arg), counts in sorted(hits.items()):
        path, n = counts.most_common(1)[0]
        if n >= 2 and n >= min_share * uses[(tool, arg)]:
            out.setdefault(tool, {})[arg] = path
    return out


def record_model(runs: list[Run], kinds: dict[str, str], policy: str | None) -> tuple[
    str | None, dict[str, list[dict]], dict[str, list[Invariant]], dict[str, dict[str, Any]], dict[str, dict[str, str]]
]:
    """(now, pools, invariants, effects, argument sources): see the module docstring."""
    now = policy_now(policy)
    pools, groups = record_pools(runs, kinds)
    invariants = {tool: learn_invariants(pool, groups.get(tool, []), now) for tool, pool in pools.items()}
    sources = argument_sources(runs, kinds)
    return now, pools, {t: i for t, i in invariants.items() if i}, write_effects(runs, kinds), sources
