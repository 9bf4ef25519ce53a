"""Planted runs written in the source formats users bring, each as its own tool writes it and as
`trace_envs.trajectories.loaders` reads it back: tau-bench trajectories, a tau2-bench results file, OpenAI-messages
JSONL with tool schemas, and ToolSandbox run folders.

Every writer takes the runs as `Run` models (a planted domain's) and writes atomically. `actions=False` leaves the
expected actions out, as most users' own logs come. The planted truth stays out of the files (a truth file beside
them holds it), as in a stranger's logs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from trace_envs.datasets.sim import write_atomically
from trace_envs.trajectories.models import Run

FORMATS = ("tau-bench", "tau2", "openai-jsonl", "toolsandbox")


def _actions(run: Run) -> list[dict[str, Any]]:
    return [{"name": g.name, "kwargs": g.arguments} for g in run.ground_truth or []]


# ---- tau-bench ------------------------------------------------------------------------------------------------------
def write_tau_bench(runs: Iterable[Run], path: str | Path, *, actions: bool = True) -> Path:
    """A tau-bench trajectories file: a JSON list of `{task_id, trial, reward, info: {task: {instruction, actions},
    reward_info}, traj}`."""
    items = []
    for run in runs:
        task: dict[str, Any] = {"instruction": run.instruction}
        if actions:
            task["actions"] = _actions(run)
        items.append({"task_id": run.task_id, "trial": run.trial, "reward": run.reward,
                      "info": {"task": task, "reward_info": {"reward": run.reward}}, "traj": run.messages})
    return write_atomically(path, lambda fh: json.dump(items, fh, ensure_ascii=False))


# ---- OpenAI-messages JSONL ------------------------------------------------------------------------------------------
def write_openai_jsonl(runs: Iterable[Run], path: str | Path, *, actions: bool = True,
                       flag_errors: bool = False) -> Path:
    """One `{task_id, trial, messages, reward, success, tools, domain, ground_truth?}` object per line;
    `flag_errors` marks the reply to a failed call with `"error": true`, as tau2's messages do."""
    def record(run: Run) -> dict[str, Any]:
        messages = run.messages
        if flag_errors:
            failed = {c.id for c in run.tool_calls if c.error}
            messages = [{**m, "error": True} if m["role"] == "tool" and m.get("tool_call_id") in failed else m
                        for m in messages]
        rec: dict[str, Any] = {"task_id": run.task_id, "trial": run.trial, "messages": messages,
                               "reward": run.reward, "success": run.success, "tools": run.tools,
                               "domain": run.meta["domain"]}
        if actions:
            rec["ground_truth"] = [g.model_dump() for g in run.ground_truth or []]
        return rec

    return write_atomically(path, lambda fh: fh.writelines(
        json.dumps(record(run), ensure_ascii=False) + "\n" for run in runs))


# ---- tau2-bench ------------------------------------------------------------------------------------------------------
def _tau2_messages(run: Run, flag_errors: bool) -> list[dict[str, Any]]:
    """The run's messages as tau2 writes them: no system message (the policy sits in the file's info), calls with a
    dict of arguments and their requestor, tool replies with `id`, `requestor` and `error`."""
    errors = {c.id: c.error for c in run.tool_calls}
    requestor_of: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in run.messages:
        role = m["role"]
        if role == "system":
            continue
        if role == "tool":
            cid = m["tool_call_id"]
            out.append({"id": cid, "role": "tool", "content": m["content"], "requestor": requestor_of.get(cid, "assistant"),
                        "error": bool(flag_errors and errors.get(cid))})
        elif m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                requestor = "user" if role == "user" else "assistant"
                requestor_of[c["id"]] = requestor
                calls.append({"id": c["id"], "name": c["function"]["name"],
                              "arguments": json.loads(c["function"]["arguments"]), "requestor": requestor})
            out.append({"role": role, "content": m.get("content"), "tool_calls": calls})
        else:
            out.append({"role": role, "content": m["content"], "tool_calls": None})
    for i, m in enumerate(out):
        m["turn_idx"] = i
    return out


def _action_checks(run: Run, task_id: str) -> list[dict[str, Any]]:
    """tau2's `reward_info.action_checks`: each expected action, and whether the run made that call."""
    made = [(c.name, c.arguments) for c in run.tool_calls if c.requestor == "agent" and not c.error]
    made += [(c.name, c.arguments) for c in run.tool_calls if c.requestor == "user"]
    return [{"action": _tau2_action(task_id, k, g), "action_match": (g.name, g.arguments) in made,
             "action_reward": 1.0 if (g.name, g.arguments) in made else 0.0}
            for k, g in enumerate(run.ground_truth or [])]


def _tau2_action(task_id: str, k: int, action: Any) -> dict[str, Any]:
    return {"action_id": f"{task_id}_{k}", "requestor": "user" if action.requestor == "user" else "assistant",
            "name": action.name, "arguments": action.arguments, "info": None, "compare_args": None}


def write_tau2(runs: Iterable[Run], path: str | Path, *, domain: str, policy: str, actions: bool = True,
               flag_errors: bool = True, tool_defs: list[dict[str, Any]] | None = None) -> Path:
    """A wrapped tau2-bench results file `{timestamp, info: {environment_info: {domain_name, policy, tool_defs}, ...},
    tasks, simulations}`. `flag_errors` sets tau2's `error` flag on the reply to a call that failed (tau2 does so when
    a tool raises); `tool_defs` stays null as in tau2's own files unless given."""
    runs = list(runs)
    tasks: dict[str, dict[str, Any]] = {}
    sims = []
    for i, run in enumerate(runs):
        if run.task_id not in tasks:
            criteria = {"actions": [_tau2_action(run.task_id, k, g)
                                    for k, g in enumerate(run.ground_truth or [])] if actions else None,
                        "env_assertions": None, "communicate_info": [], "nl_assertions": None,
                        "reward_basis": ["DB"] if actions else ["NL_ASSERTION"]}
            tasks[run.task_id] = {"id": run.task_id, "description": None, "user_scenario": {
                "persona": None, "instructions": {"domain": domain, "reason_for_call": run.instruction,
                                                  "known_info": None, "unknown_info": None, "task_instructions": "."}},
                "ticket": None, "initial_state": None, "evaluation_criteria": criteria}
        reward_info: dict[str, Any] = {"reward": run.reward, "env_assertions": None, "nl_assertions": None,
                                       "reward_basis": tasks[run.task_id]["evaluation_criteria"]["reward_basis"],
                                       "action_checks": _action_checks(run, run.task_id) if actions else None}
        if actions:
            reward_info["db_check"] = {"db_match": run.success, "db_reward": run.reward}
        sims.append({"id": f"sim-{i:06d}", "task_id": run.task_id, "trial": run.trial, "seed": i,
                     "termination_reason": "user_stop", "reward_info": reward_info,
                     "messages": _tau2_messages(run, flag_errors)})
    doc = {"timestamp": "2025-01-01T00:00:00", "info": {
        "num_trials": max((r.trial for r in runs), default=0) + 1,
        "user_info": {"implementation": "user_simulator", "llm": "planted-user"},
        "agent_info": {"implementation": "llm_agent", "llm": "planted-agent"},
        "environment_info": {"domain_name": domain, "policy": policy, "tool_defs": tool_defs}},
        "tasks": list(tasks.values()), "simulations": sims}
    return write_atomically(path, lambda fh: json.dump(doc, fh, ensure_ascii=False))


# ---- ToolSandbox -----------------------------------------------------------------------------------------------------
SANDBOX_COLUMNS = ("sender", "recipient", "content", "openai_tool_call_id", "openai_function_name",
                   "conversation_active", "tool_call_exception", "tool_trace", "visible_to")
"""The columns of a row of ToolSandbox's SANDBOX message table (execution_context.json `_dbs.SANDBOX`)."""


def call_code(call_id: str, name: str, args: dict[str, Any]) -> str:
    """What ToolSandbox's `openai_tool_call_to_python_code` writes for an agent's tool call."""
    return (f"{call_id}_parameters = {args!r}\n{call_id}_response = {name}(**{call_id}_parameters)\n"
            f"print(repr({call_id}_response))")


def folder_name(index: int, seed: int) -> str:
    """A planted run folder's name, `agent_<model>_user_<model>_<MM_DD_YYYY_HH_MM_SS>`, for folder `index`."""
    stamp = f"{(seed % 12) + 1:02d}_{(index % 28) + 1:02d}_2024_{10 + index // 28 % 12:02d}_{index % 60:02d}_00"
    return f"agent_planted-agent_user_planted-user_{stamp}"


def _python_repr(text: str | None) -> str:
    """A tool result as ToolSandbox prints it: the repr of the value (a JSON result read back as Python)."""
    try:
        return repr(json.loads(text)) if text is not None else "None"
    except ValueError:
        return repr(text)


def scenario_name(task_id: str) -> str:
    """A task id as a ToolSandbox scenario name (a Python-identifier-like slug)."""
    return re.sub(r"\W+", "_", task_id).strip("_").lower() or "scenario"


def _toolsandbox_run(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(conversation.json, the SANDBOX rows of execution_context.json) of one run. The user's own tool calls are
    ToolSandbox's user simulator's business and never in the agent's conversation: they are left out, the user's
    words about them stay."""
    errors = {c.id: c.error for c in run.tool_calls}
    conversation: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    user_calls: set[str] = set()

    def row(sender: str, recipient: str, content: str, **extra: Any) -> None:
        r = dict.fromkeys(SANDBOX_COLUMNS)
        r.update({"sender": sender, "recipient": recipient, "content": content, "conversation_active": True,
                  "visible_to": [sender, recipient], **extra})
        rows.append(r)

    for m in run.messages:
        role = m["role"]
        if role == "user" and m.get("tool_calls"):
            user_calls.update(c["id"] for c in m["tool_calls"])
            continue
        if role == "tool":
            cid = m["tool_call_id"]
            if cid in user_calls:
                continue
            failed = bool(errors.get(cid))
            content = m["content"] if failed else _python_repr(m["content"])
            conversation.append({"tool_call_id": cid, "role": "tool", "name": m["name"], "content": content})
            row("EXECUTION_ENVIRONMENT", "AGENT", content, openai_tool_call_id=cid, openai_function_name=m["name"],
                tool_call_exception=content if failed else None)
        elif m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                name, args = c["function"]["name"], json.loads(c["function"]["arguments"])
                calls.append({"id": c["id"], "function": {"arguments": c["function"]["arguments"], "name": name},
                              "type": "function"})
                row("AGENT", "EXECUTION_ENVIRONMENT", call_code(c["id"], name, args), openai_tool_call_id=c["id"],
                    openai_function_name=name)
            conversation.append({"role": "assistant", "content": "", "tool_calls": calls})
        else:
            conversation.append({"role": role, "content": m["content"]})
            sender = {"system": "SYSTEM", "user": "USER"}.get(role, "AGENT")
            row(sender, "USER" if sender == "AGENT" else "AGENT", m["content"])
    row("USER", "EXECUTION_ENVIRONMENT", "end_conversation()", conversation_active=False)
    return conversation, rows


def write_toolsandbox(runs: Iterable[Run], root: str | Path) -> Path:
    """ToolSandbox run folders under `root`, one per trial, each with one run of every task (its scenario):
    `result_summary.json` (similarity = the run's reward) and `trajectories/<scenario>/{conversation,
    execution_context}.json`. ToolSandbox logs carry no expected actions."""
    root = Path(root)
    by_trial: dict[int, list[Run]] = {}
    for run in runs:
        by_trial.setdefault(run.trial, []).append(run)
    for trial, trial_runs in sorted(by_trial.items()):
        run_dir = root / folder_name(trial, 0)
        results = []
        for run in trial_runs:
            name = scenario_name(run.task_id)
            conversation, rows = _toolsandbox_run(run)
            tools = sorted({c.name for c in run.tool_calls if c.requestor == "agent"}
                           | {t["function"]["name"] for t in run.tools or []})
            context = {"_dbs": {"SANDBOX": [{"sandbox_message_index": 0, **dict.fromkeys(SANDBOX_COLUMNS)}]
                                + [{"sandbox_message_index": i + 1, **r} for i, r in enumerate(rows)]},
                       "interactive_console": None, "tool_allow_list": ["end_conversation", *tools],
                       "tool_deny_list": None, "trace_tool": True, "tool_augmentation_list": [],
                       "preferred_tool_backend": "DEFAULT"}
            d = run_dir / "trajectories" / name
            write_atomically(d / "conversation.json", lambda fh, c=conversation: json.dump(c, fh, indent=1))
            write_atomically(d / "execution_context.json", lambda fh, c=context: json.dump(c, fh, indent=1))
            result = {"name": name, "categories": ["MULTIPLE_TOOL_CALL"], "traceback": None, "exception_type": None,
                      "milestone_similarity": run.reward, "minefield_similarity": 0.0, "similarity": run.reward,
                      "turn_count": sum(m["role"] in ("user", "assistant") for m in conversation),
                      "milestone_mapping": {}, "minefield_mapping": {}}
            results.append(result)
        mean = sum(r["similarity"] for r in results) / len(results)
        summary = {"per_scenario_results": results,
                   "category_aggregated_results": {"ALL_CATEGORIES": {"similarity": mean}}}
        write_atomically(run_dir / "result_summary.json", lambda fh, s=summary: json.dump(s, fh, indent=1))
    return root
