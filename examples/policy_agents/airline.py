"""A scripted airline agent that follows the airline policy to the letter (tau-bench's airline-wiki.md).

It reads only what any agent sees (the conversation, tool results, tool schemas) and acts as the policy says:

- it takes the user's id from the conversation and serves only reservations whose `user_id` is that id;
- before cancelling it obtains the reason for cancellation, then applies the cancellation rules: a trip with a
  flight dated before today has been (partly) flown and needs a human agent (transfer); otherwise it can be cancelled
  within 24 hours of booking, when the airline cancelled the flight, for business class, or with travel insurance
  for health or weather reasons; anything else is refused with the reason;
- basic economy flights cannot be modified; checked bags can be added, not removed;
- before any write it lists the action's details and asks for an explicit yes, and does nothing after a no;
- arguments the user does not give ("use the one on my reservation") are read off the reservation;
- it answers questions about reservations from the records, after reading them;
- asked to change a flight to one meeting constraints, it searches the route and date the user gives and picks the
  one flight that meets all of them (a departure time window, the lowest price in the reservation's cabin).

`policy(env, rng, turn)` has the signature of trace_envs' scripted policies (`trace_envs.generate.policies`): validate
an airline env with it (`validate_env(cls, extra_agents={"airline_policy": policy})`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

NOW = "2024-05-15T15:00:00"  # "The current time is 2024-05-15 15:00:00 EST." (the policy's first line)
_ID = re.compile(r"\b[A-Z0-9]{6}\b")
_RESERVATION = re.compile(r"\breservations?(?: id)?:? ([A-Z0-9]{6})\b")
_USER = re.compile(r"user id is ([a-z]+_[a-z]+_\d+)", re.I)
COVERED = ("health", "weather")
_SEARCH = re.compile(r"with origin ([A-Z]{3}), destination ([A-Z]{3}) and date (\d{4}-\d{2}-\d{2})")
_WINDOW = re.compile(r"departure time(?: est)? (before|after) (\d{1,2}:\d{2}(?::\d{2})?)")


def _days(date: str) -> str:
    return date[:10]


@dataclass
class _Task:
    kind: str  # cancel | update_flights | update_baggages | info | aggregate
    target: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    stage: str = "read"  # read -> decide -> (asked) -> done


@dataclass
class _Memory:
    tasks: list[_Task] = field(default_factory=list)
    user_id: str | None = None
    reason: str | None = None
    planned: bool = False
    pending_confirm: tuple[_Task, str, dict[str, Any]] | None = None
    finished: bool = False


def _messages(env) -> list[dict[str, Any]]:
    return env.messages


def _last_user(env) -> str:
    texts = [m["content"] for m in _messages(env) if m["role"] == "user" and isinstance(m.get("content"), str)]
    return texts[-1] if texts else ""


def _record(env, rid: str) -> dict[str, Any] | None:
    """The latest successful lookup of reservation `rid` in the conversation."""
    out = None
    for m in _messages(env):
        if m["role"] == "tool" and isinstance(m.get("content"), str):
            try:
                data = json.loads(m["content"])
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("reservation_id") == rid:
                out = data
    return out


def _call(name: str, **args: Any) -> str:
    return json.dumps({"name": name, "arguments": args})


def _tools(env) -> set[str]:
    return {t.name for t in env.tool_specs}


def _plan(env, memory: _Memory) -> None:
    opening = next(m["content"] for m in _messages(env) if m["role"] == "user")
    m = _USER.search(opening)
    memory.user_id = m.group(1) if m else None
    details: dict[str, Any] = {}
    start = opening.find("{")
    if start >= 0:
        try:
            details, _ = json.JSONDecoder().raw_decode(opening[start:])
        except ValueError:
            details = {}
    said = opening.split("{", 1)[0]  # the request, before any details the user hands over
    ids = list(dict.fromkeys(_RESERVATION.findall(said) + [i for i in _ID.findall(said) if not i.isdigit()]))
    lowered = opening.lower()
    if "know the" in lowered and "one of my" in lowered:
        memory.tasks = [_Task(kind="info", details={"question": opening})]
    elif "could you tell me" in lowered and len(ids) >= 2:
        memory.tasks = [_Task(kind="aggregate", details={"question": opening, "ids": ids})]
    elif _SEARCH.search(opening):
        origin, destination, date = _SEARCH.search(opening).groups()
        window = _WINDOW.search(opening)
        memory.tasks = [_Task(kind="pick_flight", target=i, details={
            "search": {"origin": origin, "destination": destination, "date": date},
            "window": window.groups() if window else None, "cheapest": "lowest price" in lowered}) for i in ids[:1]]
    elif "cancel" in lowered:
        memory.tasks = [_Task(kind="cancel", target=i) for i in ids]
    elif "flights" in lowered:
        memory.tasks = [_Task(kind="update_flights", target=i, details=dict(details)) for i in ids]
    elif "baggage" in lowered:
        memory.tasks = [_Task(kind="update_baggages", target=i, details=dict(details)) for i in ids]
    memory.planned = True


def _flown(record: dict[str, Any]) -> bool:
    return any(_days(f.get("date", "9999")) < _days(NOW) for f in record.get("flights", []))


def _cancellable(record: dict[str, Any], reason: str) -> tuple[bool, str]:
    if record.get("created_at", "") > "2024-05-14T15:00:00":
        return True, ""
    if "airline cancelled" in reason:
        return True, ""
    if record.get("cabin") == "business":
        return True, ""
    if record.get("insurance") == "yes" and any(c in reason for c in COVERED):
        return True, ""
    cabin = str(record.get("cabin", "")).replace("_", " ")
    return False, (
        f"it is a {cabin} reservation booked more than 24 hours ago, and the reason for cancellation is not covered"
    )


def _args_for(env, tool: str, record: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    """The user's details, plus the arguments they said to take from the reservation."""
    spec = next(t for t in env.tool_specs if t.name == tool)
    args = {"reservation_id": record["reservation_id"], **details}
    for arg in spec.required:
        if arg not in args and arg == "payment_id" and record.get("payment_history"):
            args[arg] = record["payment_history"][0]["payment_id"]
    return args


def _confirm_text(tool: str, rid: str, args: dict[str, Any]) -> str:
    extras = {k: v for k, v in args.items() if k != "reservation_id"}
    detail = f" with {json.dumps(extras, sort_keys=True)}" if extras else ""
    return f"Here is what I will do: {tool.replace('_', ' ')} for reservation id {rid}{detail}. Do you confirm (yes/no)?"


def act(env, memory: _Memory) -> str:
    if not memory.planned:
        _plan(env, memory)
    last = _last_user(env).lower()
    if memory.pending_confirm is not None:
        task, tool, args = memory.pending_confirm
        memory.pending_confirm = None
        task.stage = "done"
        if last.startswith("yes"):
            return _call(tool, **args)
        return "Understood, I have not made any changes."
    if memory.reason is None and "reason for cancellation is" in last:
        memory.reason = last.split("reason for cancellation is", 1)[1].strip(" .")
    for task in memory.tasks:
        if task.stage == "done":
            continue
        if task.kind == "info":
            return _info(env, task, last)
        if task.kind == "aggregate":
            return _aggregate(env, task)
        record = _record(env, task.target or "")
        if record is None:
            return _call("get_reservation_details", reservation_id=task.target)
        if memory.user_id and record.get("user_id") != memory.user_id:
            task.stage = "done"
            return f"I'm sorry, but reservation {task.target} does not belong to your account, so I can't change it."
        if task.kind == "cancel":
            if _flown(record):
                task.stage = "done"
                if "transfer_to_human_agents" in _tools(env):
                    summary = f"User {memory.user_id} wants to cancel reservation {task.target}, which has a flown segment."
                    return _call("transfer_to_human_agents", summary=summary)
                return f"I'm sorry, but I can't cancel reservation {task.target}: part of the trip has already been flown."
            if memory.reason is None:
                return "Could you tell me the reason for cancellation?"
            ok, why = _cancellable(record, memory.reason)
            if not ok:
                task.stage = "done"
                return f"I'm sorry, but I can't cancel reservation {task.target}: {why}, so our policy does not allow it."
            return _ask(task, "cancel_reservation", {"reservation_id": task.target}, memory)
        if task.kind == "pick_flight" and record.get("cabin") != "basic_economy":
            flights = _searched(env)
            if flights is None:
                return _call("search_direct_flight", **task.details["search"])
            best = _pick(flights, task.details, record.get("cabin", "economy"))
            if best is None:
                task.stage = "done"
                return "I'm sorry, but none of the flights on that day meets everything you asked for."
            args = _args_for(env, "update_reservation_flights", record, {
                "cabin": record.get("cabin"),
                "flights": [{"flight_number": best["flight_number"], "date": task.details["search"]["date"]}]})
            return _ask(task, "update_reservation_flights", args, memory)
        if task.kind in ("update_flights", "pick_flight"):
            if record.get("cabin") == "basic_economy":
                task.stage = "done"
                return (f"I'm sorry, but I can't change the flights of reservation {task.target}: it is a basic "
                        "economy reservation, and basic economy flights cannot be modified.")
            return _ask(task, "update_reservation_flights", _args_for(env, "update_reservation_flights", record,
                                                                      task.details), memory)
        if task.kind == "update_baggages":
            new_total = task.details.get("total_baggages")
            if isinstance(new_total, int) and new_total < int(record.get("total_baggages", 0)):
                task.stage = "done"
                return f"I'm sorry, but checked bags can be added, not removed, on reservation {task.target}."
            return _ask(task, "update_reservation_baggages", _args_for(env, "update_reservation_baggages", record,
                                                                       task.details), memory)
    memory.finished = True
    return "Thank you. Is there anything else? If not, have a nice day!"


def _searched(env) -> list[dict[str, Any]] | None:
    """The flights of the latest search in the conversation (None before any search)."""
    out = None
    for m in _messages(env):
        if m["role"] == "tool" and m.get("name") == "search_direct_flight" and isinstance(m.get("content"), str):
            try:
                data = json.loads(m["content"])
            except ValueError:
                continue
            if isinstance(data, list):
                out = [f for f in data if isinstance(f, dict)]
    return out


def _minutes(clock: str) -> int:
    parts = [int(p) for p in clock.split(":")]
    return parts[0] * 60 + parts[1]


def _pick(flights: list[dict[str, Any]], details: dict[str, Any], cabin: str) -> dict[str, Any] | None:
    """The one flight meeting the user's constraints: inside the departure window, the cheapest in the cabin."""
    ok = [f for f in flights if f.get("status", "available") == "available"]
    if details.get("window"):
        side, bound = details["window"]
        when = lambda f: _minutes(f["scheduled_departure_time_est"]) * 60  # noqa: E731
        limit = sum(int(p) * m for p, m in zip(bound.split(":"), (3600, 60, 1)))
        ok = [f for f in ok if (when(f) < limit if side == "before" else when(f) > limit)]
    if len(ok) > 1 and not details.get("cheapest"):
        return None  # the user's constraints do not single one out: ask rather than guess
    return min(ok, key=lambda f: f.get("prices", {}).get(cabin, float("inf"))) if ok else None


def _ask(task: _Task, tool: str, args: dict[str, Any], memory: _Memory) -> str:
    memory.pending_confirm = (task, tool, args)
    return _confirm_text(tool, task.target or "", args)


def _leaves(record: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(record, dict):
        for k, v in record.items():
            out.update(_leaves(v, f"{prefix}{k}."))
    elif isinstance(record, list) and record:
        out.update(_leaves(record[0], f"{prefix}0."))
    elif prefix:
        out[prefix[:-1]] = record
    return out


def _info(env, task: _Task, last: str) -> str:
    rid = task.details.get("rid")
    if rid is None:
        found = _ID.findall(_last_user(env))
        if not found:
            return "Could you please tell me your reservation id?"
        task.details["rid"] = rid = found[0]
    record = _record(env, rid)
    if record is None:
        return _call("get_reservation_details", reservation_id=rid)
    question = task.details["question"].lower()
    if "flight number" in question:
        value = record["flights"][0]["flight_number"]
        what = "flight number of the first flight"
    else:
        best = max(_leaves(record), key=lambda p: sum(w in question for w in p.replace(".", " ").replace("_", " ").split()))
        value, what = _leaves(record)[best], best.replace("_", " ")
    task.stage = "done"
    return f"The {what} of reservation {rid} is {value}. Is there anything else? If not, have a nice day!"


def _aggregate(env, task: _Task) -> str:
    ids = task.details["ids"]
    for rid in ids:
        if _record(env, rid) is None:
            return _call("get_reservation_details", reservation_id=rid)
    paid = [sum(p.get("amount", 0) for p in _record(env, rid).get("payment_history", [])) for rid in ids]
    question = task.details["question"].lower()
    if "highest" in question:
        value, what = max(paid), "highest amount paid"
    elif "lowest" in question:
        value, what = min(paid), "lowest amount paid"
    elif "how many" in question:
        value, what = sum(1 for p in paid if p > 0), "number with an amount paid above zero"
    else:
        value, what = sum(paid), "total amount paid"
    task.stage = "done"
    shown = f"{value:.2f}" if isinstance(value, float) and not float(value).is_integer() else str(int(value))
    return f"I looked up the {len(ids)} reservations you listed: the {what} is {shown}. Have a nice day!"


def make_policy():
    """The agent as a `trace_envs` scripted policy `(env, rng, turn) -> action`, with a fresh memory each episode."""
    state: dict[str, _Memory] = {}

    def policy(env, rng, turn: int) -> str:
        if turn == 1 or "memory" not in state:
            state["memory"] = _Memory()
        return act(env.unwrapped if hasattr(env, "unwrapped") else env, state["memory"])

    return policy


policy = make_policy()
