"""Loaders for real agent runs: tau-bench trajectories, tau2-bench results and OpenAI-messages JSONL.

The format is picked from the file's content, never from its name:

- **tau-bench** historical trajectories: a JSON list of `{task_id, trial, reward, info: {task: {...}}, traj}`.
- **tau2-bench** results: a JSON object `{info: {environment_info: {...}}, tasks: [...], simulations: [...]}`.
- **OpenAI-messages JSONL**: one `{"task_id", "messages", "reward" | "success", "tools"?, "trial"?}` object per line
  (a JSON list of such objects, or a single one, is accepted too).

Every problem becomes one `TrajectoryFormatError` whose message names the file and where in it (`line N` for JSONL,
`run index N (task X)` for JSON) and what was expected. With `skip_invalid=True` bad runs (and unreadable files) are
skipped and reported in `LoadResult.skipped` instead.

Runs are built from plain dicts after cheap structural checks and validated by pydantic in one pass per run; nothing
read from a file is ever executed.
"""

from __future__ import annotations

import glob as _glob
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from trace_envs.limits import MAX_ARGUMENT_DEPTH, nesting_exceeds
from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.models import Run

__all__ = [
    "LoadResult",
    "TrajectoryFormatError",
    "SUPPORTED_FORMATS",
    "expand_paths",
    "guess_domain",
    "load_file",
    "load_runs",
    "summarize",
]

SUCCESS_EPS = 1e-6
TRAJECTORY_SUFFIXES = (".json", ".jsonl")
SUPPORTED_FORMATS = (
    'supported formats: tau-bench trajectories (a JSON list of runs with "traj"), '
    'tau2-bench results (a JSON object with "simulations"), '
    'OpenAI-messages JSONL (one {"task_id", "messages", "reward" or "success"} object per line)'
)
_GLOB_CHARS = set("*?[")
_REQUESTORS = {"assistant": "agent", "agent": "agent", "user": "user"}


@dataclass
class LoadResult:
    """What `load_runs` read."""

    runs: list[Run] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One message per skipped run (or skipped file), `<file>: <where>: <why>`."""
    files: list[str] = field(default_factory=list)
    """Trajectory files read, in order."""
    ignored: list[str] = field(default_factory=list)
    """Files found while walking a directory or glob that are valid JSON but no trajectory format (e.g. tasks.json)."""


class _RunError(Exception):
    """A problem with one run; becomes a TrajectoryFormatError or a skip."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


class _UnknownFormat(Exception):
    pass


# --------------------------------------------------------------------------------------------------------------------
# small helpers


def _jtype(value: Any) -> str:
    """JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _got(value: Any) -> str:
    return "null" if value is None else _jtype(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _decode_arguments(raw: Any) -> tuple[dict[str, Any], bool]:
    """Arguments as a dict; the flag is False when they could not be decoded to an object."""
    if raw is None or raw == "":
        return {}, True
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return {}, False
    if isinstance(raw, dict) and not nesting_exceeds(raw):
        return raw, True
    return {}, False


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def guess_domain(tool_names: Iterable[str]) -> str:
    """`airline` or `retail` from the tools a run used, else `custom`."""
    names = " ".join(tool_names)
    airline = sum(names.count(w) for w in ("reservation", "flight", "airport", "baggage", "certificate"))
    retail = sum(names.count(w) for w in ("order", "product", "item", "zip"))
    if airline == retail == 0:
        return "custom"
    return "airline" if airline >= retail else "retail"


def _validate_run(data: dict[str, Any], where: str) -> Run:
    try:
        return Run.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "run"
        raise _RunError(where, f'invalid field "{loc}": {err.get("msg", "invalid value")}') from None


# --------------------------------------------------------------------------------------------------------------------
# joining calls and results (OpenAI-shaped messages)


def _id_text(value: Any) -> str | None:
    """A call id as text: ids of another JSON type (a number, a list...) are compared by their JSON form."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


class _CallJoiner:
    """Collects tool calls in message order and joins each tool reply to its call.

    Call ids are sometimes reused within one run (tau-bench does this): a reply goes to the nearest preceding
    unmatched call with its id, taking calls of one assistant message in order.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self.bad_arguments: list[str] = []

    def add(self, call_id: str | None, name: str, arguments: Any, requestor: str, message_index: int) -> dict:
        call_id = _id_text(call_id)
        if not call_id:
            call_id = f"call_{len(self.calls)}"
        args, ok = _decode_arguments(arguments)
        if not ok:
            self.bad_arguments.append(call_id)
        call = {
            "id": call_id,
            "name": name,
            "arguments": args,
            "result": None,
            "error": False,
            "requestor": requestor,
            "message_index": message_index,
        }
        self.calls.append(call)
        self._pending.setdefault(call_id, []).append(call)
        return call

    def reply(self, call_id: str | None, content: Any, error: bool) -> dict | None:
        call_id = _id_text(call_id)
        pending = self._pending.get(call_id or "")
        if not pending:
            # No id (or an unknown one): the oldest call still waiting for a reply.
            pending = next((p for p in self._pending.values() if p), None) if not call_id else None
            if not pending:
                return None
        latest = max(c["message_index"] for c in pending)
        for i, c in enumerate(pending):
            if c["message_index"] == latest:
                call = pending.pop(i)
                break
        call["result"] = _content_text(content)
        call["error"] = bool(error)
        return call


def _check_message(msg: Any, where: str, idx: int, key: str) -> str:
    if not isinstance(msg, dict):
        raise _RunError(where, f'expected "{key}[{idx}]" to be a message object, got {_got(msg)}')
    role = msg.get("role")
    if not isinstance(role, str):
        raise _RunError(where, f'expected "{key}[{idx}].role" to be a string, got {_got(role)}')
    return role


def _openai_messages(
    messages: list[Any], where: str, key: str, *, copy: bool, error_prefix: bool
) -> tuple[list[dict[str, Any]], _CallJoiner]:
    """Check OpenAI chat messages and collect their tool calls.

    With `copy` the messages are rebuilt in canonical OpenAI form (arguments as JSON strings, `type: function`);
    otherwise the source dicts are used as they are (tau-bench already stores canonical messages).
    """
    joiner = _CallJoiner()
    out: list[dict[str, Any]] = [] if copy else messages
    for i, msg in enumerate(messages):
        role = _check_message(msg, where, i, key)
        tcs = msg.get("tool_calls")
        if role == "tool":
            content = msg.get("content")
            is_error = bool(msg.get("error")) or (
                error_prefix and isinstance(content, str) and content.startswith("Error")
            )
            call = joiner.reply(msg.get("tool_call_id") or msg.get("id"), content, is_error)
            if copy:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": msg.get("tool_call_id") or msg.get("id") or (call["id"] if call else None),
                        "name": msg.get("name") or (call["name"] if call else None),
                        "content": _content_text(content),
                    }
                )
            continue
        if tcs:
            if not isinstance(tcs, list):
                raise _RunError(where, f'expected "{key}[{i}].tool_calls" to be a list, got {_got(tcs)}')
            canon = []
            for j, tc in enumerate(tcs):
                if not isinstance(tc, dict):
                    raise _RunError(where, f'expected "{key}[{i}].tool_calls[{j}]" to be an object, got {_got(tc)}')
                fn = tc.get("function")
                src = fn if isinstance(fn, dict) else tc
                name = src.get("name")
                if not isinstance(name, str) or not name:
                    raise _RunError(
                        where, f'expected "{key}[{i}].tool_calls[{j}]" to have a function name, got {_got(name)}'
                    )
                requestor = _REQUESTORS.get(tc.get("requestor") or ("user" if role == "user" else "agent"), "agent")
                call = joiner.add(tc.get("id"), name, src.get("arguments"), requestor, i)
                if copy:
                    raw = src.get("arguments")
                    canon.append(
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": raw if isinstance(raw, str) else json.dumps(call["arguments"]),
                            },
                        }
                    )
            if copy:
                out.append({"role": role, "content": _content_text(msg.get("content")), "tool_calls": canon})
            continue
        if copy:
            m = {"role": role, "content": _content_text(msg.get("content"))}
            if msg.get("name") and role != "tool":
                m["name"] = msg["name"]
            out.append(m)
    return out, joiner


def _first_system(messages: list[dict[str, Any]]) -> str | None:
    for m in messages:
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            return m["content"]
    return None


def _ground_truth(actions: Any, where: str, key: str) -> list[dict[str, Any]] | None:
    if actions is None:
        return None
    if not isinstance(actions, list):
        raise _RunError(where, f'expected "{key}" to be a list of actions, got {_got(actions)}')
    out = []
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise _RunError(where, f'expected "{key}[{i}]" to be an action with a "name", got {_got(a)}')
        args = a.get("arguments", a.get("kwargs"))
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise _RunError(where, f'expected "{key}[{i}]" arguments to be an object, got {_got(args)}')
        if nesting_exceeds(args):
            raise _RunError(where, f'"{key}[{i}]" arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep')
        out.append(
            {"name": a["name"], "arguments": args, "requestor": _REQUESTORS.get(a.get("requestor") or "agent", "agent")}
        )
    return out


def _normalize_tools(tool_defs: Any) -> list[dict[str, Any]] | None:
    """Tool definitions as OpenAI tool schemas `{"type": "function", "function": {...}}`, or None."""
    if not tool_defs:
        return None
    items: list[Any]
    if isinstance(tool_defs, dict):
        items = []
        for name, d in tool_defs.items():
            if isinstance(d, dict):
                d = dict(d.get("function", d))
                d.setdefault("name", name)
                items.append(d)
    elif isinstance(tool_defs, list):
        items = tool_defs
    else:
        return None
    out = []
    for t in items:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        if not isinstance(fn.get("name"), str):
            continue
        out.append(
            {**t, "type": "function", "function": fn} if "function" in t else {"type": "function", "function": fn}
        )
    return out or None


def _reward_success(reward: Any, success: Any, where: str, reward_key: str = "reward") -> tuple[float, bool]:
    if reward is None and success is None:
        raise _RunError(where, f'expected "{reward_key}" (a number) or "success" (a boolean), got neither')
    if reward is not None and not _is_number(reward):
        raise _RunError(where, f'expected "{reward_key}" to be a number, got {_got(reward)}')
    if isinstance(reward, int) and not -1e308 < reward < 1e308:  # float() would raise OverflowError
        raise _RunError(where, f'expected "{reward_key}" to be a number, got an integer too large for a float')
    if success is not None and not isinstance(success, bool):
        raise _RunError(where, f'expected "success" to be a boolean, got {_got(success)}')
    if reward is None:
        return (1.0 if success else 0.0), bool(success)
    if success is None:
        success = reward >= 1.0 - SUCCESS_EPS
    return float(reward), bool(success)


def _trial(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _RunError(where, f'expected "trial" to be an integer, got {_got(value)}')
    return value


# --------------------------------------------------------------------------------------------------------------------
# per-format run builders


def _tau_bench_run(item: Any, idx: int, file: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise _RunError(f"run index {idx}", f"expected a run object, got {_got(item)}")
    task_id = item.get("task_id")
    where = f"run index {idx} (task {task_id})"
    if task_id is None or isinstance(task_id, (dict, list, bool)):
        raise _RunError(where, f'expected "task_id" to be a string or number, got {_got(task_id)}')
    traj = item.get("traj")
    if not isinstance(traj, list):
        raise _RunError(where, f'expected "traj" to be a list of messages, got {_got(traj)}')
    if not traj:
        raise _RunError(where, 'expected "traj" to hold at least one message, got an empty list')
    reward, success = _reward_success(item.get("reward"), None, where)
    info = item.get("info")
    if info is None:
        info = {}
    if not isinstance(info, dict):
        raise _RunError(where, f'expected "info" to be an object, got {_got(info)}')
    task = info.get("task") or {}
    if not isinstance(task, dict):
        raise _RunError(where, f'expected "info.task" to be an object, got {_got(task)}')
    messages, joiner = _openai_messages(traj, where, "traj", copy=False, error_prefix=True)
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
    return {
        "source": "tau-bench",
        "file": file,
        "task_id": str(task_id),
        "trial": _trial(item.get("trial"), where),
        "messages": messages,
        "tool_calls": joiner.calls,
        "reward": reward,
        "success": success,
        "policy": _first_system(messages),
        "ground_truth": _ground_truth(task.get("actions"), where, "info.task.actions"),
        "instruction": instruction if isinstance(instruction, str) else None,
        "meta": meta,
        "_where": where,
    }


def _tau2_instruction(task: dict[str, Any]) -> str | None:
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


def _tau2_runs(data: dict[str, Any], file: str) -> Iterable[tuple[str, dict[str, Any] | _RunError]]:
    info = data.get("info") or {}
    if not isinstance(info, dict):
        raise _RunError("top level", f'expected "info" to be an object, got {_got(info)}')
    env = info.get("environment_info") or {}
    if not isinstance(env, dict):
        raise _RunError("top level", f'expected "info.environment_info" to be an object, got {_got(env)}')
    policy = env.get("policy") if isinstance(env.get("policy"), str) else None
    domain = env.get("domain_name") if isinstance(env.get("domain_name"), str) else None
    tools = _normalize_tools(env.get("tool_defs"))
    agent_info = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    user_info = info.get("user_info") if isinstance(info.get("user_info"), dict) else {}
    tasks: dict[str, dict[str, Any]] = {}
    for t in data.get("tasks") or []:
        if isinstance(t, dict) and t.get("id") is not None:
            tasks[str(t["id"])] = t
    sims = data.get("simulations")
    if not isinstance(sims, list):
        raise _RunError("top level", f'expected "simulations" to be a list, got {_got(sims)}')
    for idx, sim in enumerate(sims):
        if not isinstance(sim, dict):
            yield f"run index {idx}", _RunError(f"run index {idx}", f"expected a simulation object, got {_got(sim)}")
            continue
        task_id = sim.get("task_id")
        where = f"run index {idx} (task {task_id})"
        try:
            if task_id is None or isinstance(task_id, (dict, list, bool)):
                raise _RunError(where, f'expected "task_id" to be a string or number, got {_got(task_id)}')
            msgs = sim.get("messages")
            if not isinstance(msgs, list):
                raise _RunError(where, f'expected "messages" to be a list of messages, got {_got(msgs)}')
            if not msgs:
                raise _RunError(where, 'expected "messages" to hold at least one message, got an empty list')
            reward_info = sim.get("reward_info")
            if reward_info is not None and not isinstance(reward_info, dict):
                raise _RunError(where, f'expected "reward_info" to be an object, got {_got(reward_info)}')
            reward_val = (reward_info or {}).get("reward")
            reward, success = _reward_success(
                reward_val if reward_info is not None else 0.0, None, where, "reward_info.reward"
            )
            messages, joiner = _openai_messages(msgs, where, "messages", copy=True, error_prefix=False)
            task = tasks.get(str(task_id), {})
            crit = task.get("evaluation_criteria") if isinstance(task.get("evaluation_criteria"), dict) else {}
            meta: dict[str, Any] = {"domain": domain} if domain else {}
            if agent_info.get("llm"):
                meta["agent_model"] = agent_info["llm"]
            if user_info.get("llm"):
                meta["user_model"] = user_info["llm"]
            for k in ("termination_reason", "seed"):
                if sim.get(k) is not None:
                    meta[k] = sim[k]
            if reward_info is None:
                meta["reward_info_missing"] = True
            if joiner.bad_arguments:
                meta["undecodable_arguments"] = joiner.bad_arguments
            run = {
                "source": "tau2-bench",
                "file": file,
                "task_id": str(task_id),
                "trial": _trial(sim.get("trial"), where),
                "messages": messages,
                "tool_calls": joiner.calls,
                "reward": reward,
                "success": success,
                "policy": policy or _first_system(messages),
                "ground_truth": _ground_truth(crit.get("actions"), where, "evaluation_criteria.actions"),
                "tools": tools,
                "instruction": _tau2_instruction(task),
                "meta": meta,
                "_where": where,
            }
        except _RunError as exc:
            yield where, exc
            continue
        yield where, run


def _openai_run(obj: Any, where_base: str, file: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _RunError(where_base, f"expected a run object, got {_got(obj)}")
    task_id = obj.get("task_id")
    where = f"{where_base} (task {task_id})" if where_base.startswith("run index") else where_base
    if task_id is None or isinstance(task_id, (dict, list, bool)):
        raise _RunError(where, f'expected "task_id" to be a string or number, got {_got(task_id)}')
    msgs = obj.get("messages")
    if not isinstance(msgs, list):
        raise _RunError(where, f'expected "messages" to be a list of messages, got {_got(msgs)}')
    if not msgs:
        raise _RunError(where, 'expected "messages" to hold at least one message, got an empty list')
    reward, success = _reward_success(obj.get("reward"), obj.get("success"), where)
    messages, joiner = _openai_messages(msgs, where, "messages", copy=True, error_prefix=False)
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, (list, dict)):
        raise _RunError(where, f'expected "tools" to be a list of tool schemas, got {_got(tools)}')
    meta = dict(obj["meta"]) if isinstance(obj.get("meta"), dict) else {}
    if isinstance(obj.get("domain"), str) and "domain" not in meta:
        meta["domain"] = obj["domain"]
    if joiner.bad_arguments:
        meta["undecodable_arguments"] = joiner.bad_arguments
    policy = obj.get("policy") if isinstance(obj.get("policy"), str) else _first_system(messages)
    instruction = obj.get("instruction")
    return {
        "source": "openai-jsonl",
        "file": file,
        "task_id": str(task_id),
        "trial": _trial(obj.get("trial"), where),
        "messages": messages,
        "tool_calls": joiner.calls,
        "reward": reward,
        "success": success,
        "policy": policy,
        "ground_truth": _ground_truth(obj.get("ground_truth"), where, "ground_truth"),
        "tools": _normalize_tools(tools),
        "instruction": instruction if isinstance(instruction, str) else None,
        "meta": meta,
        "_where": where,
    }


# --------------------------------------------------------------------------------------------------------------------
# files


def _read_text(path: Path, display: str) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TrajectoryFormatError(display, None, f"cannot read file: {exc.strerror or exc}") from None
    if not raw.strip():
        raise TrajectoryFormatError(display, None, f"file is empty; expected JSON or JSONL ({SUPPORTED_FORMATS})")
    if b"\x00" in raw[:65536]:
        raise TrajectoryFormatError(display, None, "not a text file (contains NUL bytes); expected JSON or JSONL")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrajectoryFormatError(
            display, None, f"not a text file (invalid UTF-8 at byte {exc.start}); expected JSON or JSONL"
        ) from None
    text = text[1:] if text.startswith("\ufeff") else text
    # A lone surrogate escape (half of a UTF-16 pair) decodes to a str that cannot be written as UTF-8 again.
    return _LONE_SURROGATE.sub(r"\\ufffd", text) if "\\u" in text and _SURROGATE.search(text) else text


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _looks_like_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines()[:50] if ln.strip()]
    if len(lines) < 2:
        return False
    for k, ln in enumerate(lines[:5]):
        try:
            obj = json.loads(ln)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and (k == 0 or "messages" in obj):
            return True
    return False


def _unknown_format(data: Any) -> str:
    if isinstance(data, dict):
        keys = ", ".join(list(data)[:8]) or "none"
        got = f"a JSON object with keys: {keys}"
    elif isinstance(data, list):
        first = next((x for x in data if isinstance(x, dict)), None)
        got = f"a JSON list of {_jtype(data[0]) if data else 'nothing'}" + (
            f" items (first keys: {', '.join(list(first)[:8])})" if first else "s"
        )
    else:
        got = f"JSON {_jtype(data)}"
    return f"unknown trajectory format: got {got}; {SUPPORTED_FORMATS}"


def _file_records(text: str, display: str) -> tuple[str, Iterable[tuple[str, dict[str, Any] | _RunError]]]:
    """Detect the format and yield `(where, run dict or error)` per run."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise TrajectoryFormatError(display, None, "JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        if _looks_like_jsonl(text):
            return "openai-jsonl", _jsonl_records(text, display)
        rest = text[exc.pos :].rstrip()
        truncated = exc.pos >= len(text.rstrip()) - 1 or (
            exc.msg.startswith("Unterminated string") and "\n" not in rest
        )
        msg = exc.msg.removesuffix(" starting at").removesuffix(" at")
        hint = "; the file looks truncated" if truncated else ""
        raise TrajectoryFormatError(
            display, f"line {exc.lineno} column {exc.colno}", f"invalid JSON ({msg}{hint})"
        ) from None
    except ValueError as exc:  # not a JSONDecodeError: e.g. an integer literal over the int-string conversion limit
        if _looks_like_jsonl(text):
            return "openai-jsonl", _jsonl_records(text, display)
        raise TrajectoryFormatError(display, None, f"invalid JSON ({exc})") from None
    if isinstance(data, list):
        if not data:
            raise TrajectoryFormatError(display, None, "expected a list of runs, got an empty list")
        first = next((x for x in data if isinstance(x, dict)), None)
        if first is not None and "traj" in first:
            return "tau-bench", _list_records(data, display, _tau_bench_run)
        if first is not None and "messages" in first:
            return "openai-jsonl", _list_records(data, display, lambda it, i, f: _openai_run(it, f"run index {i}", f))
        raise _UnknownFormat(_unknown_format(data))
    if isinstance(data, dict):
        if "simulations" in data:
            return "tau2-bench", _guard(_tau2_runs(data, display))
        if "messages" in data:
            return "openai-jsonl", _list_records([data], display, lambda it, i, f: _openai_run(it, "line 1", f))
        raise _UnknownFormat(_unknown_format(data))
    raise _UnknownFormat(_unknown_format(data))


def _guard(records: Iterable[tuple[str, Any]]) -> Iterable[tuple[str, Any]]:
    """File-level problems found while iterating (e.g. `simulations` not a list) surface as a top-level error."""
    try:
        yield from records
    except _RunError as exc:
        yield exc.where, exc


def _list_records(data: list[Any], display: str, build) -> Iterable[tuple[str, Any]]:
    for i, item in enumerate(data):
        try:
            rec = build(item, i, display)
        except _RunError as exc:
            yield exc.where, exc
            continue
        yield rec["_where"], rec


def _jsonl_records(text: str, display: str) -> Iterable[tuple[str, Any]]:
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {n}"
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError or an over-long integer literal
            col = f" column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else (
                "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            )
            yield where, _RunError(f"{where}{col}", f"invalid JSON ({msg})")
            continue
        try:
            rec = _openai_run(obj, where, display)
        except _RunError as exc:
            yield where, exc
            continue
        yield where, rec


def _walk(directory: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in files:
            if f.endswith(TRAJECTORY_SUFFIXES) and not f.startswith("."):
                found.append(Path(root) / f)
    return sorted(found)


def expand_paths(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """Files to read as `(path, explicit)`: directories are walked (`*.json`, `*.jsonl`, sorted) and globs expanded.

    `explicit` is False for files found by a walk or a glob; those are ignored when they hold valid JSON that is no
    trajectory format (tasks.json beside results). Raises TrajectoryFormatError for a path that matches nothing.
    """
    out: list[tuple[Path, bool]] = []
    seen: set[str] = set()

    def add(p: Path, explicit: bool) -> None:
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            out.append((p, explicit))

    for raw in paths:
        s = str(raw)
        p = Path(s)
        if p.is_dir():
            for f in _walk(p):
                add(f, False)
        elif p.is_file():
            add(p, True)
        elif _GLOB_CHARS & set(s):
            matches = sorted(_glob.glob(s, recursive=True))
            if not matches:
                raise TrajectoryFormatError(s, None, "no files match this pattern")
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    for f in _walk(mp):
                        add(f, False)
                elif mp.is_file():
                    add(mp, False)
        elif p.exists():
            raise TrajectoryFormatError(s, None, "not a regular file or directory")
        else:
            raise TrajectoryFormatError(s, None, "no such file or directory")
    return out


def _unique_id(base: str, used: set[str]) -> str:
    if base not in used:
        used.add(base)
        return base
    k = 2
    while f"{base}~{k}" in used:
        k += 1
    used.add(f"{base}~{k}")
    return f"{base}~{k}"


def _load_one(path: Path, explicit: bool, skip_invalid: bool, result: LoadResult, used_ids: set[str]) -> None:
    display = str(path)
    try:
        text = _read_text(path, display)
        try:
            _fmt, records = _file_records(text, display)
        except _UnknownFormat as exc:
            if not explicit:
                result.ignored.append(f"{display}: {exc}")
                return
            raise TrajectoryFormatError(display, None, str(exc)) from None
    except TrajectoryFormatError as exc:
        if skip_invalid:
            result.skipped.append(str(exc))
            return
        raise
    runs: list[Run] = []
    skipped: list[str] = []
    stem = path.stem
    good: list[dict[str, Any]] = []
    for _where, rec in records:
        if isinstance(rec, _RunError):
            err = TrajectoryFormatError(display, rec.where, rec.message)
            if not skip_invalid:
                raise err
            skipped.append(str(err))
            continue
        good.append(rec)
    # A source without a domain name gets one guess for the whole file (a run that used no tools still belongs to it).
    if any("domain" not in rec["meta"] for rec in good):
        file_domain = guess_domain(c["name"] for rec in good for c in rec["tool_calls"])
        for rec in good:
            rec["meta"].setdefault("domain", file_domain)
    for rec in good:
        rec_where = rec.pop("_where")
        run_id = _unique_id(f"{stem}/{rec['task_id']}/{rec['trial']}", used_ids)
        rec["run_id"] = run_id
        try:
            runs.append(_validate_run(rec, rec_where))
        except _RunError as exc:
            used_ids.discard(run_id)
            err = TrajectoryFormatError(display, exc.where, exc.message)
            if not skip_invalid:
                raise err from None
            skipped.append(str(err))
    if not runs and not skipped:
        exc = TrajectoryFormatError(display, None, "no runs found")
        if not skip_invalid:
            raise exc
        skipped.append(str(exc))
    result.files.append(display)
    result.runs.extend(runs)
    result.skipped.extend(skipped)


def load_file(path: str | Path, *, skip_invalid: bool = False) -> LoadResult:
    """Load one trajectory file (any supported format)."""
    result = LoadResult()
    _load_one(Path(path), True, skip_invalid, result, set())
    return result


def load_runs(paths: Iterable[str | Path] | str | Path, *, skip_invalid: bool = False) -> LoadResult:
    """Load runs from files, directories (walked for `*.json`/`*.jsonl`) and glob patterns.

    Raises `TrajectoryFormatError` on the first bad file or run, unless `skip_invalid`: then bad runs, and files that
    cannot be read at all, are left out and listed in `LoadResult.skipped`.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    result = LoadResult()
    used_ids: set[str] = set()
    for path, explicit in expand_paths(paths):
        _load_one(path, explicit, skip_invalid, result, used_ids)
    return result


def summarize(runs: list[Run]) -> dict[str, Any]:
    """Counts over runs: runs, passed, failed, tasks and tasks with both a pass and a fail.

    Tasks are keyed by (source, domain, task id) so that airline task 2 and retail task 2 stay apart, and so do
    tau-bench and tau2-bench tasks that share an id; the same task in two files of one source is one task.
    """
    outcomes: dict[tuple[str, str, str], set[bool]] = {}
    for r in runs:
        outcomes.setdefault((r.source, str(r.meta.get("domain", "")), r.task_id), set()).add(r.success)
    passed = sum(1 for r in runs if r.success)
    return {
        "runs": len(runs),
        "passed": passed,
        "failed": len(runs) - passed,
        "tasks": len(outcomes),
        "mixed_tasks": sum(1 for v in outcomes.values() if len(v) == 2),
        "sources": dict(Counter(r.source for r in runs)),
    }
