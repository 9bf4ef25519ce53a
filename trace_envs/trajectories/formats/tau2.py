"""tau2-bench results, wrapped or as a bare list.

- **Wrapped** (what `tau2 run` saves): `{timestamp, info: {environment_info: {domain_name, policy, tool_defs}, agent_info,
  user_info}, tasks: [...], simulations: [...]}`; claimed when the object has `simulations`.
- **Bare list** (a leaderboard submission): `[{task_id, trial, seed, termination_reason, reward_info: {reward, ...},
  messages}, ...]`, with no policy, tasks or domain name beside it (the domain is then guessed from the tools, as for
  any source without one). Claimed when the first object of the list has `messages` and `reward_info` or
  `termination_reason`, which no other format's runs carry.

Each simulation's assistant `tool_calls[]` are `{id, name, arguments (a dict), requestor}`; tool messages carry `id`,
`content`, `requestor` and `error`. Calls the simulated user makes (`requestor: "user"`) are kept as the user's.

A simulation is read by the actions it was graded on: `reward_info.action_checks` names them (with their
`action_id`s). When they are not its `task_id`'s `evaluation_criteria.actions` (a public results file had 111 of 112
simulations graded on another task's actions), the simulation is read as the task whose actions they are (its id,
instruction and expected actions), its file's `task_id` kept in `meta["task_id_in_file"]`; when no task of the file has
them, its expected actions are the graded ones. A bare list carries no tasks: its expected actions are the graded ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from trace_envs.trajectories.formats.common import (
    Record,
    RunError,
    first_system,
    got,
    ground_truth,
    message_list,
    normalize_tools,
    openai_messages,
    reward_success,
    task_id_text,
    trial,
)
from trace_envs.trajectories.formats.registry import SourceFormat, register_format

_SIMULATION_KEYS = ("reward_info", "termination_reason")


@dataclass
class _Context:
    """What a wrapped file says about all its simulations (a bare list says none of it)."""

    policy: str | None = None
    domain: str | None = None
    tools: list[dict[str, Any]] | None = None
    agent_model: Any = None
    user_model: Any = None
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_action: dict[str, set[str]] = field(default_factory=dict)
    """Action key (its `action_id`, else name and arguments) -> the ids of the tasks whose expected actions hold it."""

    def task_of(self, graded: list[str]) -> str | None:
        """The one task whose expected actions are the `graded` action keys (all of them, the same set first)."""
        ids = set.intersection(*(self.by_action.get(k, set()) for k in graded)) if graded else set()
        exact = {t for t in ids if set(_task_keys(self.tasks[t])) == set(graded)}
        found = exact or ids
        return next(iter(found)) if len(found) == 1 else None


def _action_key(action: Any) -> str | None:
    """How an action is matched between a task and a simulation's checks: its `action_id`, else its name and
    arguments."""
    if not isinstance(action, dict) or not isinstance(action.get("name"), str):
        return None
    if isinstance(action.get("action_id"), str) and action["action_id"]:
        return action["action_id"]
    return json.dumps([action["name"], action.get("arguments")], sort_keys=True, default=str)


def _task_actions(task: dict[str, Any]) -> Any:
    """A task's `evaluation_criteria.actions` as the file has them (None when it has none)."""
    crit = task.get("evaluation_criteria") if isinstance(task.get("evaluation_criteria"), dict) else {}
    return crit.get("actions")


def _task_keys(task: dict[str, Any]) -> list[str]:
    actions = _task_actions(task)
    return [k for k in map(_action_key, actions) if k is not None] if isinstance(actions, list) else []


def _graded(reward_info: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The actions a simulation was graded on (`reward_info.action_checks[].action`)."""
    checks = (reward_info or {}).get("action_checks")
    if not isinstance(checks, list):
        return []
    return [c["action"] for c in checks if isinstance(c, dict) and _action_key(c.get("action")) is not None]


def _instruction(task: dict[str, Any]) -> str | None:
    scenario = task.get("user_scenario")
    if not isinstance(scenario, dict):
        return None
    ins = scenario.get("instructions")
    if isinstance(ins, str):
        return ins
    if isinstance(ins, dict):
        parts = [ins.get(k) for k in ("reason_for_call", "known_info", "unknown_info", "task_instructions")]
        text = "\n\n".join(p for p in parts if isinstance(p, str) and p.strip())
        return text or None
    return None


def _context(data: dict[str, Any]) -> _Context:
    info = data.get("info") or {}
    if not isinstance(info, dict):
        raise RunError("top level", f'expected "info" to be an object, got {got(info)}')
    env = info.get("environment_info") or {}
    if not isinstance(env, dict):
        raise RunError("top level", f'expected "info.environment_info" to be an object, got {got(env)}')
    agent_info = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    user_info = info.get("user_info") if isinstance(info.get("user_info"), dict) else {}
    ctx = _Context(
        policy=env.get("policy") if isinstance(env.get("policy"), str) else None,
        domain=env.get("domain_name") if isinstance(env.get("domain_name"), str) else None,
        tools=normalize_tools(env.get("tool_defs")),
        agent_model=agent_info.get("llm"),
        user_model=user_info.get("llm"),
    )
    tasks = data.get("tasks") or []
    if not isinstance(tasks, list):
        raise RunError("top level", f'expected "tasks" to be a list, got {got(tasks)}')
    for t in tasks:
        if isinstance(t, dict) and t.get("id") is not None:
            ctx.tasks[str(t["id"])] = t
            for key in _task_keys(t):
                ctx.by_action.setdefault(key, set()).add(str(t["id"]))
    return ctx


def simulation_record(sim: Any, idx: int, file: str, ctx: _Context) -> tuple[str, dict[str, Any]]:
    if not isinstance(sim, dict):
        raise RunError(f"run index {idx}", f"expected a simulation object, got {got(sim)}")
    task_id = sim.get("task_id")
    where = f"run index {idx} (task {task_id})"
    task_id = task_id_text(task_id, where)
    msgs = message_list(sim.get("messages"), where, "messages")
    reward_info = sim.get("reward_info")
    if reward_info is not None and not isinstance(reward_info, dict):
        raise RunError(where, f'expected "reward_info" to be an object, got {got(reward_info)}')
    reward_val = (reward_info or {}).get("reward")
    reward, success = reward_success(reward_val if reward_info is not None else 0.0, None, where, "reward_info.reward")
    messages, joiner = openai_messages(msgs, where, "messages", copy=True)
    meta: dict[str, Any] = {"domain": ctx.domain} if ctx.domain else {}
    graded = _graded(reward_info)
    keys = [k for k in map(_action_key, graded) if k is not None]
    task = ctx.tasks.get(task_id, {})
    actions: Any = _task_actions(task) if task else None
    if keys and (not ctx.tasks or not set(keys) <= set(_task_keys(task))):
        actions = graded  # the actions it was graded on win over a task id that names others
        if ctx.tasks:
            meta["task_id_in_file"] = task_id
            meta["graded_actions"] = keys[:3]
            read_as = ctx.task_of(keys)
            if read_as is not None:
                task_id, task = read_as, ctx.tasks[read_as]
    if ctx.agent_model:
        meta["agent_model"] = ctx.agent_model
    if ctx.user_model:
        meta["user_model"] = ctx.user_model
    for k in ("termination_reason", "seed"):
        if sim.get(k) is not None:
            meta[k] = sim[k]
    if reward_info is None:
        meta["reward_info_missing"] = True
    if joiner.bad_arguments:
        meta["undecodable_arguments"] = joiner.bad_arguments
    return where, {
        "source": "tau2-bench",
        "file": file,
        "task_id": task_id,
        "trial": trial(sim.get("trial"), where),
        "messages": messages,
        "tool_calls": joiner.calls,
        "reward": reward,
        "success": success,
        "policy": ctx.policy or first_system(messages),
        "ground_truth": ground_truth(actions, where, "evaluation_criteria.actions" if actions is not graded
                                     else "reward_info.action_checks"),
        "tools": ctx.tools,
        "instruction": _instruction(task),
        "meta": meta,
    }


def _simulations(sims: list[Any], file: str, ctx: _Context) -> Iterator[Record]:
    for idx, sim in enumerate(sims):
        try:
            yield simulation_record(sim, idx, file, ctx)
        except RunError as exc:
            yield exc.where, exc


def sniff_wrapped(document: Any) -> bool:
    return isinstance(document, dict) and "simulations" in document


def read_wrapped(document: dict[str, Any], path: Path, display: str) -> Iterable[Record]:
    try:
        ctx = _context(document)
        sims = document.get("simulations")
        if not isinstance(sims, list):
            raise RunError("top level", f'expected "simulations" to be a list, got {got(sims)}')
    except RunError as exc:  # a file-level problem: one error for the whole file
        return [(exc.where, exc)]
    return _simulations(sims, display, ctx)


def sniff_bare(document: Any) -> bool:
    if not isinstance(document, list):
        return False
    first = next((x for x in document if isinstance(x, dict)), None)
    return first is not None and "messages" in first and any(k in first for k in _SIMULATION_KEYS)


def read_bare(document: list[Any], path: Path, display: str) -> Iterable[Record]:
    return _simulations(document, display, _Context())


WRAPPED = register_format(
    SourceFormat(
        name="tau2-bench",
        description='tau2-bench results (a JSON object with "simulations")',
        sniff=sniff_wrapped,
        read=read_wrapped,
    )
)
BARE_LIST = register_format(
    SourceFormat(
        name="tau2-bench-list",
        description='tau2-bench simulations as a bare JSON list (each with "reward_info" and "messages")',
        sniff=sniff_bare,
        read=read_bare,
    )
)
