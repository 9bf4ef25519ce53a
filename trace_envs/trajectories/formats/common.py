"""What every source format's reader shares: the located run error, and builders for OpenAI-shaped messages,
joined tool calls, ground-truth actions, tool schemas, rewards and trials.

A reader turns one source (a parsed JSON document, a JSONL line, a run folder) into *run records*: plain dicts with the
fields of `Run` except `run_id` (the loader assigns it), each paired with where it came from. Problems are `RunError`s
naming that place (`run index 3 (task 7)`, `line 12`, `per_scenario_results[2]`) and the field.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from pydantic import ValidationError

from trace_envs.limits import MAX_ARGUMENT_DEPTH, nesting_exceeds
from trace_envs.trajectories.models import Run
from trace_envs.trajectories.tool_errors import tool_error

SUCCESS_EPS = 1e-6
REQUESTORS = {"assistant": "agent", "agent": "agent", "user": "user"}

Record = tuple[str, "dict[str, Any] | RunError"]
"""What a reader yields per run: `(where, run record)` or `(where, RunError)`."""


class RunError(Exception):
    """A problem with one run (or, raised from a reader, with the whole source); the loader turns it into a
    `TrajectoryFormatError` naming the file, or a skip."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def records(items: Iterable[Any], build) -> Iterator[Record]:
    """`(where, record)` per item from `build(item, index) -> (where, record)`; a `RunError` it raises becomes that
    item's error and the next item is read."""
    for i, item in enumerate(items):
        try:
            yield build(item, i)
        except RunError as exc:
            yield exc.where, exc


def requestor_of(value: Any, default: str) -> str:
    """agent or user from a source's requestor field (`assistant`, `agent`, `user`); `default` when it has none, and
    agent for anything else."""
    return REQUESTORS.get(value if isinstance(value, str) and value else default, "agent")


def task_id_text(task_id: Any, where: str) -> str:
    """A run's task id as text; ids are strings or numbers."""
    if task_id is None or isinstance(task_id, (dict, list, bool)):
        raise RunError(where, f'expected "task_id" to be a string or number, got {got(task_id)}')
    return str(task_id)


def message_list(value: Any, where: str, key: str) -> list[Any]:
    """A run's non-empty list of messages (under `key`)."""
    if not isinstance(value, list):
        raise RunError(where, f'expected "{key}" to be a list of messages, got {got(value)}')
    if not value:
        raise RunError(where, f'expected "{key}" to hold at least one message, got an empty list')
    return value


def jtype(value: Any) -> str:
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


def got(value: Any) -> str:
    return "null" if value is None else jtype(value)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def decode_arguments(raw: Any) -> tuple[dict[str, Any], bool]:
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


def content_text(content: Any) -> str | None:
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


def validate_run(data: dict[str, Any], where: str) -> Run:
    try:
        return Run.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "run"
        raise RunError(where, f'invalid field "{loc}": {err.get("msg", "invalid value")}') from None


# --------------------------------------------------------------------------------------------------------------------
# joining calls and results (OpenAI-shaped messages)


def id_text(value: Any) -> str | None:
    """A call id as text: ids of another JSON type (a number, a list...) are compared by their JSON form."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


class CallJoiner:
    """Collects tool calls in message order and joins each tool reply to its call.

    Call ids are sometimes reused within one run (tau-bench does this): a reply goes to the nearest preceding
    unmatched call with its id, taking calls of one assistant message in order.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self.bad_arguments: list[str] = []

    def add(self, call_id: str | None, name: str, arguments: Any, requestor: str, message_index: int) -> dict:
        call_id = id_text(call_id)
        if not call_id:
            call_id = f"call_{len(self.calls)}"
        args, ok = decode_arguments(arguments)
        if not ok:
            self.bad_arguments.append(call_id)
        call = {
            "id": call_id,
            "name": name,
            "arguments": args,
            "result": None,
            "error": False,
            "error_reason": None,
            "requestor": requestor,
            "message_index": message_index,
        }
        self.calls.append(call)
        self._pending.setdefault(call_id, []).append(call)
        return call

    def reply(self, call_id: str | None, content: Any, flagged: bool) -> dict | None:
        """Join a tool reply to its call; `flagged`: the source marked the reply as an error (whether it is one is
        `tool_error`'s to say, from the flag or the text)."""
        call_id = id_text(call_id)
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
        call["result"] = content_text(content)
        set_error(call, tool_error(call["result"], flagged=flagged))
        return call


def check_message(msg: Any, where: str, idx: int, key: str) -> str:
    if not isinstance(msg, dict):
        raise RunError(where, f'expected "{key}[{idx}]" to be a message object, got {got(msg)}')
    role = msg.get("role")
    if not isinstance(role, str):
        raise RunError(where, f'expected "{key}[{idx}].role" to be a string, got {got(role)}')
    return role


def set_error(call: dict[str, Any], reason: str | None) -> None:
    """Mark a call record's reply as an error for `reason` (None: a success)."""
    call["error"] = reason is not None
    call["error_reason"] = reason


def openai_messages(
    messages: list[Any], where: str, key: str, *, copy: bool
) -> tuple[list[dict[str, Any]], CallJoiner]:
    """Check OpenAI chat messages and collect their tool calls; a reply is an error when the message says so (an
    `error` flag) or its text is one (`tool_error`).

    With `copy` the messages are rebuilt in canonical OpenAI form (arguments as JSON strings, `type: function`);
    otherwise the source dicts are used as they are (tau-bench already stores canonical messages).
    """
    joiner = CallJoiner()
    out: list[dict[str, Any]] = [] if copy else messages
    for i, msg in enumerate(messages):
        role = check_message(msg, where, i, key)
        tcs = msg.get("tool_calls")
        if role == "tool":
            content = msg.get("content")
            call = joiner.reply(msg.get("tool_call_id") or msg.get("id"), content, bool(msg.get("error")))
            if copy:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": msg.get("tool_call_id") or msg.get("id") or (call["id"] if call else None),
                        "name": msg.get("name") or (call["name"] if call else None),
                        "content": content_text(content),
                    }
                )
            continue
        if tcs:
            if not isinstance(tcs, list):
                raise RunError(where, f'expected "{key}[{i}].tool_calls" to be a list, got {got(tcs)}')
            canon = []
            for j, tc in enumerate(tcs):
                if not isinstance(tc, dict):
                    raise RunError(where, f'expected "{key}[{i}].tool_calls[{j}]" to be an object, got {got(tc)}')
                fn = tc.get("function")
                src = fn if isinstance(fn, dict) else tc
                name = src.get("name")
                if not isinstance(name, str) or not name:
                    raise RunError(
                        where, f'expected "{key}[{i}].tool_calls[{j}]" to have a function name, got {got(name)}'
                    )
                requestor = requestor_of(tc.get("requestor"), "user" if role == "user" else "agent")
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
                out.append({"role": role, "content": content_text(msg.get("content")), "tool_calls": canon})
            continue
        if copy:
            m = {"role": role, "content": content_text(msg.get("content"))}
            if msg.get("name") and role != "tool":
                m["name"] = msg["name"]
            out.append(m)
    return out, joiner


def first_system(messages: list[dict[str, Any]]) -> str | None:
    for m in messages:
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            return m["content"]
    return None


def ground_truth(actions: Any, where: str, key: str) -> list[dict[str, Any]] | None:
    if actions is None:
        return None
    if not isinstance(actions, list):
        raise RunError(where, f'expected "{key}" to be a list of actions, got {got(actions)}')
    out = []
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise RunError(where, f'expected "{key}[{i}]" to be an action with a "name", got {got(a)}')
        args = a.get("arguments", a.get("kwargs"))
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise RunError(where, f'expected "{key}[{i}]" arguments to be an object, got {got(args)}')
        if nesting_exceeds(args):
            raise RunError(where, f'"{key}[{i}]" arguments nest more than {MAX_ARGUMENT_DEPTH} levels deep')
        out.append(
            {"name": a["name"], "arguments": args, "requestor": requestor_of(a.get("requestor"), "agent")}
        )
    return out


def normalize_tools(tool_defs: Any) -> list[dict[str, Any]] | None:
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


def reward_success(reward: Any, success: Any, where: str, reward_key: str = "reward") -> tuple[float, bool]:
    if reward is None and success is None:
        raise RunError(where, f'expected "{reward_key}" (a number) or "success" (a boolean), got neither')
    if reward is not None and not is_number(reward):
        raise RunError(where, f'expected "{reward_key}" to be a number, got {got(reward)}')
    if isinstance(reward, int) and not -1e308 < reward < 1e308:  # float() would raise OverflowError
        raise RunError(where, f'expected "{reward_key}" to be a number, got an integer too large for a float')
    if success is not None and not isinstance(success, bool):
        raise RunError(where, f'expected "success" to be a boolean, got {got(success)}')
    if reward is None:
        return (1.0 if success else 0.0), bool(success)
    if success is None:
        success = reward >= 1.0 - SUCCESS_EPS
    return float(reward), bool(success)


def trial(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunError(where, f'expected "trial" to be an integer, got {got(value)}')
    return value
