"""An airline agent written from the policy text and the tool schemas alone (tau-bench's airline-wiki.md), without
reading how any env builds its scenarios: the authors of an env are the wrong people to test it.

It sees what any chat agent sees: the conversation (the system prompt with the policy and the current time, the
user's turns, tool results) and the tools offered. It serves requests to change reservations (cancel, change
flights, add bags), one reservation at a time, and applies the policy's rules to the reservation it has read; asked
about reservations (a total over several, a value of one), it reads them and answers from the records alone:

- "The agent must first obtain the user id, the reservation id, and the reason for cancellation": it asks for what
  the user has not said, and serves only reservations whose `user_id` is the user's;
- "If any of the segments are already used, the agent cannot help and transfer is needed": a flight dated before the
  current time the policy states (or already flying or landed) means a human agent (`transfer_to_human_agents` when
  offered, else it says so), and nothing is cancelled;
- "All reservations can be cancelled within 24 hours of booking, or if the airline cancelled the flight. Otherwise,
  basic economy or economy flights can be cancelled only if travel insurance is bought and the condition is met,
  and business flights can always be cancelled": anything else is refused with the reason;
- "Basic economy flights cannot be modified" (a cabin change keeping the flights can); "The user can add but not
  remove checked bags";
- asked for a new flight meeting constraints, it searches the route and date the user gives and books only a flight
  whose status is "available" with a seat in the cabin for every passenger, the one flight meeting the user's
  departure window (the cheapest in the cabin when they want the lowest price), replacing the trip's segment on that
  route (a one-way trip's connections by the direct flight), "without changing the origin, destination, and trip
  type";
- "list the action details and obtain explicit user confirmation (yes)": before every write, and nothing after a no;
- arguments the user leaves to the reservation ("use the one on my reservation") are read off it.

`make_policy()` returns a trace_envs scripted policy `(env, rng, turn) -> action`:
`trace-envs check <env> --agent examples/policy_agents/airline_literal.py`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

_NOW = re.compile(r"current time is (\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)")
_USER = re.compile(r"user id is ([A-Za-z0-9_]+)", re.I)
# "cancel reservation X", "update the flights of reservation X": the action and its reservation.
_ASK = re.compile(r"\b(cancel|update|change|modify)(?: the (\w+) of)? (?:my )?reservation(?: id)? ([A-Z0-9]{6})\b")
_DETAILS = re.compile(r"Use these details(?: for each of them)?: (\{.*?\})(?:\.\s|\.$|$)")
# details that differ per reservation: "Use these details: for reservation id AB12CD, {...}; for reservation id ..."
_DETAILS_FOR = re.compile(r"for reservation id (\w+), (\{.*?\})(?=; for |\.\s|\.$|$)")
_SEARCH = re.compile(r"with origin ([A-Z]{3}), destination ([A-Z]{3}) and date (\d{4}-\d{2}-\d{2})")
_WINDOW = re.compile(r"departure time(?: est)? (before|after) (\d{1,2}:\d{2}(?::\d{2})?)")
_TOTAL = re.compile(r"I have these reservations: ([A-Z0-9, and]+)\. Could you tell me the total ([^?]+)\?")
_FIELD = re.compile(r"know the ([a-z ]+?) of the (first|second|third|last) ([a-z]+) of one of my reservations")
_ORDINAL = {"first": 0, "second": 1, "third": 2, "last": -1}
_RID = re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b")
COVERED = ("health", "weather")
REASONS = (("airline cancelled", "airline cancelled flight"), ("cancelled by the airline", "airline cancelled flight"),
           ("change of plan", "change of plan"), ("health", "health"), ("weather", "weather"))
USED = ("flying", "landed")
GOODBYE = "Is there anything else I can help you with? If not, have a nice day!"


@dataclass
class _Task:
    tool: str
    rid: str
    details: dict[str, Any] = field(default_factory=dict)
    search: dict[str, str] | None = None  # the flight the user looks for (origin, destination, date)
    window: tuple[str, str] | None = None  # (before | after, HH:MM:SS) on the departure time
    cheapest: bool = False
    outcome: str = ""  # done, refused, transferred


@dataclass
class _Question:
    """A question about the user's reservations: a total over several, or one value of one."""

    rids: list[str]
    total: str = ""  # the words of what to add up ("amount paid")
    path: tuple[str, int, str] | None = None  # (list field, index, item field): ("flights", 0, "flight_number")


@dataclass
class _Memory:
    tasks: list[_Task] | None = None
    question: _Question | None = None
    index: int = 0
    reason: str | None = None
    asked: dict[str, int] = field(default_factory=dict)  # question -> number of user turns when it was asked
    pending: tuple[str, dict[str, Any]] | None = None  # a write awaiting the user's yes
    finished: bool = False


# ---- what the agent sees ----------------------------------------------------------------------------------------
def _texts(env, role: str) -> list[str]:
    return [m["content"] for m in env.messages if m["role"] == role and isinstance(m.get("content"), str)]


def _tools(env) -> dict[str, dict[str, Any]]:
    out = {}
    for schema in env._schemas:
        fn = schema.get("function", schema)
        out[fn["name"]] = fn.get("parameters", {})
    return out


def _now(env) -> datetime | None:
    m = _NOW.search(" ".join(_texts(env, "system")))
    return datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}") if m else None


def _record(env, rid: str) -> dict[str, Any] | None:
    """The latest result that is reservation `rid`."""
    out = None
    for text in _texts(env, "tool"):
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("reservation_id") == rid:
            out = data
    return out


def _call(name: str, **args: Any) -> str:
    return json.dumps({"name": name, "arguments": args})


def _leaf(record: Any, name: str) -> Any:
    """The first value under key `name` anywhere in the record (payment_id sits in payment_history)."""
    if isinstance(record, dict):
        if name in record:
            return record[name]
        items = list(record.values())
    elif isinstance(record, list):
        items = record
    else:
        return None
    for item in items:
        found = _leaf(item, name)
        if found is not None:
            return found
    return None


# ---- the policy's rules -----------------------------------------------------------------------------------------
def _flown(record: dict[str, Any], now: datetime | None) -> str | None:
    """Why a segment of the trip counts as used, if one does."""
    for flight in record.get("flights") or []:
        if not isinstance(flight, dict):
            continue
        if flight.get("status") in USED:
            return f"flight {flight.get('flight_number')} is {flight.get('status')}"
        date = flight.get("date")
        if now is not None and isinstance(date, str) and date[:10] < now.date().isoformat():
            return f"flight {flight.get('flight_number')} was on {date[:10]}, before today"
    return None


def _cancel_decision(record: dict[str, Any], reason: str, now: datetime | None) -> tuple[str, str]:
    """(allowed | blocked | handoff, why) for cancelling `record` for `reason`."""
    used = _flown(record, now)
    if used:
        return "handoff", f"the trip has already been partly flown ({used})"
    created = record.get("created_at")
    if now is not None and isinstance(created, str):
        try:
            if datetime.fromisoformat(created.replace(" ", "T")) > now - timedelta(hours=24):
                return "allowed", "it was booked within the last 24 hours"
        except ValueError:
            pass
    if reason == "airline cancelled flight":
        return "allowed", "the airline cancelled the flight"
    cabin = str(record.get("cabin", ""))
    if cabin == "business":
        return "allowed", "business flights can always be cancelled"
    if record.get("insurance") == "yes" and reason in COVERED:
        return "allowed", "your travel insurance covers the reason"
    why = (f"its cabin is {cabin.replace('_', ' ')}, it was booked more than 24 hours ago, and "
           f"{'the travel insurance does not cover the reason' if record.get('insurance') == 'yes' else 'it has no travel insurance'}")
    return "blocked", why


def _write_decision(task: _Task, record: dict[str, Any], args: dict[str, Any]) -> tuple[str, str]:
    if task.tool == "update_reservation_flights":
        kept = [(f.get("flight_number"), f.get("date")) for f in record.get("flights") or [] if isinstance(f, dict)]
        wanted = [(f.get("flight_number"), f.get("date")) for f in args.get("flights") or [] if isinstance(f, dict)]
        if record.get("cabin") == "basic_economy" and wanted != kept:
            return "blocked", "its cabin is basic economy, and basic economy flights cannot be modified"
    if task.tool == "update_reservation_baggages":
        have, want = record.get("total_baggages"), args.get("total_baggages")
        if isinstance(have, int) and isinstance(want, int) and want < have:
            return "blocked", f"it has {have} checked bags, and checked bags can be added but not removed"
    return "allowed", ""


def _reason(text: str) -> str:
    low = text.lower()
    return next((label for words, label in REASONS if words in low), "other")


# ---- the conversation ---------------------------------------------------------------------------------------------
def _parse(env) -> list[_Task]:
    users = _texts(env, "user")
    text = " ".join(users)
    details: dict[str, Any] = {}
    m = _DETAILS.search(text)
    if m:
        try:
            details = json.loads(m.group(1))
        except ValueError:
            details = {}
    per_record = {}
    for rid, found in _DETAILS_FOR.findall(text):
        try:
            per_record[rid] = json.loads(found)
        except ValueError:
            continue
    writes = _tools(env)
    tasks = []
    for verb, thing, rid in _ASK.findall(text):
        tool = "cancel_reservation" if verb == "cancel" else f"update_reservation_{thing or 'flights'}"
        if tool in writes and all(t.rid != rid or t.tool != tool for t in tasks):
            tasks.append(_Task(tool, rid, dict(per_record.get(rid, details))))
    found, window = _SEARCH.search(text), _WINDOW.search(text.lower())
    for task in tasks:
        if task.tool == "update_reservation_flights" and found and "flights" not in task.details:
            task.search = dict(zip(("origin", "destination", "date"), found.groups()))
            task.window = (window.group(1), _clock(window.group(2))) if window else None
            task.cheapest = "lowest price" in text.lower() or "cheapest" in text.lower()
    return tasks


def _clock(text: str) -> str:
    parts = text.split(":")
    return ":".join(p.zfill(2) for p in (parts + ["00"])[:3])


def _search_result(env, search: dict[str, str]) -> list[dict[str, Any]] | None:
    """The flights of the latest search the agent made for `search`."""
    last = None
    for i, m in enumerate(env.messages):
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            if fn.get("name") == "search_direct_flight" and json.loads(fn.get("arguments") or "{}") == search:
                last = i
    if last is None:
        return None
    reply = next((m for m in env.messages[last + 1:] if m["role"] == "tool"), None)
    try:
        data = json.loads(reply["content"]) if reply else None
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _pick(task: _Task, flights: list[dict[str, Any]], cabin: str, travellers: int) -> list[dict[str, Any]]:
    """The searched flights the user's constraints allow: bookable ("available"), with a seat in the cabin for every
    passenger, in the departure window; the cheapest in the cabin when the user wants the lowest price."""
    fits = []
    for f in flights:
        seats = (f.get("available_seats") or {}).get(cabin)
        if f.get("status") != "available" or not isinstance(seats, int) or seats < travellers:
            continue
        if task.window:
            side, clock = task.window
            leaves = _clock(str(f.get("scheduled_departure_time_est", "")))
            if (side == "before" and not leaves < clock) or (side == "after" and not leaves > clock):
                continue
        fits.append(f)
    if task.cheapest and fits:
        low = min((f.get("prices") or {}).get(cabin, float("inf")) for f in fits)
        fits = [f for f in fits if (f.get("prices") or {}).get(cabin) == low]
    return fits


def _new_itinerary(record: dict[str, Any], task: _Task, flight: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The reservation's entire new flight list: the segment on the searched route replaced, the others kept; None
    when no segment flies that route (the change would alter the trip's origin or destination)."""
    search = task.search or {}
    new = {"flight_number": flight.get("flight_number"), "date": search.get("date")}
    out, replaced = [], False
    for seg in record.get("flights") or []:
        if seg.get("origin") == search.get("origin") and seg.get("destination") == search.get("destination"):
            out.append(new)
            replaced = True
        else:
            out.append({"flight_number": seg.get("flight_number"), "date": seg.get("date")})
    if replaced:
        return out
    # A one-way trip with connections, replaced by a direct flight on its own origin and destination.
    if record.get("flight_type") == "one_way" and (record.get("origin"), record.get("destination")) == (
            search.get("origin"), search.get("destination")):
        return [new]
    return None


def _choose_flight(env, task: _Task, record: dict[str, Any]) -> str | None:
    """The next step towards the new flights the user described: the search, or a refusal saying why no change can
    be made; None once `task.details` holds the new itinerary (and the cabin)."""
    if record.get("cabin") == "basic_economy":
        return (f"I'm sorry, but I cannot change the flights of reservation {task.rid}: its cabin is basic economy, "
                "and basic economy flights cannot be modified.")
    search = task.search or {}
    flights = _search_result(env, search)
    if flights is None:
        return _call("search_direct_flight", **search)
    cabin = str(task.details.get("cabin") or record.get("cabin", ""))
    fits = _pick(task, flights, cabin, len(record.get("passengers") or []) or 1)
    itinerary = _new_itinerary(record, task, fits[0]) if len(fits) == 1 else None
    if itinerary is None:
        what = "no flight" if not fits else ("several flights" if len(fits) > 1 else "no segment of the trip")
        return (f"I'm sorry, but I cannot change reservation {task.rid} as asked: {what} on {search['origin']} to "
                f"{search['destination']} on {search['date']} meets what you asked for, and a change may not alter "
                "the trip's origin, destination or trip type.")
    task.details["flights"] = itinerary
    task.details.setdefault("cabin", cabin)
    return None


def _parse_question(text: str) -> _Question | None:
    m = _TOTAL.search(text)
    if m:
        return _Question(rids=_RID.findall(m.group(1)), total=m.group(2).strip())
    m = _FIELD.search(text)
    if m:
        return _Question(rids=[], path=(m.group(3) + "s", _ORDINAL[m.group(2)], m.group(1).replace(" ", "_")))
    return None


def _numbers(record: Any, prefix: str = "") -> dict[str, list[float]]:
    """Every numeric value of a record by its path (`*` for list items)."""
    out: dict[str, list[float]] = {}
    items = record.items() if isinstance(record, dict) else (("*", v) for v in record) if isinstance(record, list) else ()
    for k, v in items:
        path = f"{prefix}{k}"
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.setdefault(path, []).append(float(v))
        elif isinstance(v, (dict, list)):
            for p, vals in _numbers(v, path + ".").items():
                out.setdefault(p, []).extend(vals)
    return out


def _answer_question(env, memory: _Memory, user_id: str) -> str:
    """Read every reservation the question names (asking for the id first when the user gave none), then answer
    from the records alone."""
    question = memory.question
    assert question is not None
    if not question.rids:
        ask = "Could you tell me the reservation id?"
        reply = _answer(memory, env, ask)
        found = _RID.findall(reply or "")
        if not found:
            return _ask(memory, env, ask)
        question.rids = found[:1]
    records = []
    for rid in question.rids:
        record = _record(env, rid)
        if record is None:
            return _call("get_reservation_details", reservation_id=rid)
        if record.get("user_id") != user_id:
            return f"I'm sorry, but reservation {rid} is not one of yours, so I cannot tell you about it."
        records.append(record)
    memory.finished = True
    if question.path is not None:
        items, index, name = question.path
        listed = records[0].get(items) or []
        value = listed[index].get(name) if listed and isinstance(listed[index], dict) else None
        return (f"The {name.replace('_', ' ')} of the {items[:-1]} you asked about, on reservation {question.rids[0]}, "
                f"is {value}. {GOODBYE}")
    wanted = set(re.findall(r"[a-z]+", question.total.lower()))
    paths: dict[str, list[float]] = {}
    for record in records:
        for path, values in _numbers(record).items():
            paths.setdefault(path, []).extend(values)
    best = max(paths, key=lambda p: (len(wanted & set(re.split(r"[._*]+", p))), -len(p)))
    total = sum(paths[best])
    shown = int(total) if total == int(total) else round(total, 2)
    return f"The total {question.total} over reservations {', '.join(question.rids)} is {shown}. {GOODBYE}"


def _ask(memory: _Memory, env, question: str) -> str:
    memory.asked[question] = len(_texts(env, "user"))
    return question


def _answer(memory: _Memory, env, question: str) -> str | None:
    """The user's reply to `question`, once they gave one."""
    users = _texts(env, "user")
    at = memory.asked.get(question)
    return " ".join(users[at:]) if at is not None and len(users) > at else None


def _arguments(env, task: _Task, record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The write's arguments (the user's details, then the record's values) and the required ones still missing."""
    schema = _tools(env)[task.tool]
    args: dict[str, Any] = {"reservation_id": task.rid}
    missing = []
    for name in schema.get("properties", {}):
        if name in args:
            continue
        if name in task.details:
            args[name] = task.details[name]
        elif name in schema.get("required", []):
            value = _leaf(record, name)
            if value is None:
                missing.append(name)
            else:
                args[name] = value
    return args, missing


def act(env, memory: _Memory) -> str:
    users = _texts(env, "user")
    user_id = next((m.group(1) for u in users for m in [_USER.search(u)] if m), None)
    if user_id is None:
        return _ask(memory, env, "Could you tell me your user id?")
    if memory.question is None and not memory.tasks:
        memory.tasks = _parse(env)
        memory.question = None if memory.tasks else _parse_question(" ".join(users))
    if memory.question is not None:
        return _answer_question(env, memory, user_id) if not memory.finished else GOODBYE
    if not memory.tasks:
        return _ask(memory, env, "Could you tell me the reservation id and what you would like me to do with it?")
    now = _now(env)
    while memory.index < len(memory.tasks):
        task = memory.tasks[memory.index]
        record = _record(env, task.rid)
        if record is None:
            if _texts(env, "tool") and env.messages[-1]["role"] == "tool" and task.rid in str(env.messages[-1]["content"]):
                task.outcome, memory.index = "refused", memory.index + 1
                return f"I could not find reservation {task.rid}, so I cannot change it."
            return _call("get_reservation_details", reservation_id=task.rid)
        if record.get("user_id") != user_id:
            task.outcome, memory.index = "refused", memory.index + 1
            return f"I'm sorry, but reservation {task.rid} is not one of yours, so I cannot change it."
        if memory.pending is not None:
            tool, args = memory.pending
            reply = _answer(memory, env, _confirm_text(tool, args))
            if reply is None:
                return _confirm_text(tool, args)
            memory.pending = None
            task.outcome, memory.index = ("done" if _yes(reply) else "declined"), memory.index + 1
            if task.outcome == "done":
                return _call(tool, **args)
            continue
        if task.tool == "cancel_reservation":
            if memory.reason is None:
                question = "Could you tell me the reason for the cancellation?"
                reply = _answer(memory, env, question)
                if reply is None:
                    return _ask(memory, env, question)
                memory.reason = _reason(reply)
            decision, why = _cancel_decision(record, memory.reason, now)
        else:
            decision, why = "allowed", ""
        if task.search is not None and "flights" not in task.details:
            step = _choose_flight(env, task, record)
            if step is not None:
                if not step.startswith("{"):  # a refusal: this request is over
                    task.outcome, memory.index = "refused", memory.index + 1
                return step
        args, missing = _arguments(env, task, record)
        if missing:
            question = f"Could you tell me the {', '.join(m.replace('_', ' ') for m in missing)}?"
            reply = _answer(memory, env, question)
            if reply is None:
                return _ask(memory, env, question)
            task.outcome, memory.index = "refused", memory.index + 1
            return f"Without the {', '.join(missing)} I cannot make this change to reservation {task.rid}."
        if decision == "allowed":
            decision, why = _write_decision(task, record, args)
        if decision == "handoff":
            task.outcome, memory.index = "transferred", len(memory.tasks)
            summary = (f"User {user_id} wants to cancel reservation {task.rid}, but {why}; the policy says a "
                       "human agent is needed.")
            if "transfer_to_human_agents" in _tools(env):
                return _call("transfer_to_human_agents", summary=summary)
            return (f"I cannot cancel reservation {task.rid}: {why}, and a trip with a used segment can only be "
                    "handled by a human agent. Please contact one of our human agents.")
        if decision == "blocked":
            task.outcome, memory.index = "refused", memory.index + 1
            return f"I'm sorry, but I cannot {_words(task.tool)} for reservation {task.rid}: {why}."
        memory.pending = (task.tool, args)
        return _ask(memory, env, _confirm_text(task.tool, args))
    if not memory.finished:
        memory.finished = True
        if any(t.outcome == "transferred" for t in memory.tasks):
            return "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
        done = [t.rid for t in memory.tasks if t.outcome == "done"]
        head = f"Done: I have completed your request for {', '.join(done)}. " if done else ""
        return head + GOODBYE
    return GOODBYE


def _words(tool: str) -> str:
    return tool.replace("_", " ").replace("reservation ", "the reservation's ").replace(" reservation", " the reservation")


def _confirm_text(tool: str, args: dict[str, Any]) -> str:
    detail = ", ".join(f"{k} {json.dumps(v)}" for k, v in args.items() if k != "reservation_id")
    return (f"Here is what I will do: {tool.replace('_', ' ')} for reservation {args['reservation_id']}"
            f"{' with ' + detail if detail else ''}. Do you confirm that I should proceed (yes/no)?")


def _yes(text: str) -> bool:
    low = text.lower()
    return re.search(r"\byes\b", low) is not None and re.search(r"\b(no|don't|do not)\b", low) is None


def make_policy():
    """The agent as a `trace_envs` scripted policy `(env, rng, turn) -> action`, with a fresh memory each episode."""
    state: dict[str, _Memory] = {}

    def policy(env, rng, turn: int) -> str:
        if turn == 1 or "memory" not in state:
            state["memory"] = _Memory()
        return act(env.unwrapped if hasattr(env, "unwrapped") else env, state["memory"])

    return policy
