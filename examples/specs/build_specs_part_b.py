"""Build the hand-written information_gathering, aggregation_arithmetic and handoff_to_human example specs over the
real tau-bench airline data (tool names, argument examples and result shapes from the gpt-4o airline runs, policy
excerpts from the airline wiki).

Run: .venv/bin/python examples/specs/build_specs_part_b.py  (rewrites the JSON files beside this script)
"""

from __future__ import annotations

import json
from pathlib import Path

from trace_envs.spec.families import env_check
from trace_envs.spec.model import CapabilitySpec, ScenarioKnobs

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE.parents[2] / "shared" / "data" / "tau-bench"
RUNS = DATA_DIR / "gpt-4o-airline.json"
WIKI = DATA_DIR / "airline-wiki.md"


def _runs() -> list[dict]:
    return json.loads(RUNS.read_text())


def _calls(tool: str):
    """(arguments, result text) of every call of `tool` in the runs, in file order."""
    for run in _runs():
        pending: dict[str, dict] = {}
        for msg in run["traj"]:
            if msg["role"] == "assistant":
                for tc in msg.get("tool_calls") or []:
                    pending[tc["id"]] = tc["function"]
            elif msg["role"] == "tool" and msg.get("name") == tool:
                fn = pending.get(msg.get("tool_call_id"))
                if fn is not None:
                    yield json.loads(fn["arguments"]), msg["content"]


def first_result(tool: str) -> dict:
    for _, content in _calls(tool):
        if content.startswith("{"):
            return json.loads(content)
    raise LookupError(tool)


def first_text_result(tool: str) -> str:
    for _, content in _calls(tool):
        return content
    raise LookupError(tool)


def argument_examples(tool: str, arg: str, n: int = 2) -> list:
    seen: list = []
    for args, content in _calls(tool):
        value = args.get(arg)
        if value is not None and value not in seen and not content.startswith("Error"):
            seen.append(value)
        if len(seen) >= n:
            break
    if not seen:
        raise LookupError(f"{tool}.{arg}")
    return seen


def policy_lines(*starts: str) -> str:
    """The wiki's lines that begin with each of `starts` (after the bullet), verbatim."""
    lines = [line.strip() for line in WIKI.read_text().splitlines()]
    out = []
    for start in starts:
        hits = [line for line in lines if line.lstrip("- ").startswith(start)]
        if not hits:
            raise LookupError(f"policy line starting {start!r}")
        out.append(hits[0])
    return "\n".join(out)


def reservation_tools(*, with_cancel: bool = True) -> list[dict]:
    rid_examples = argument_examples("get_reservation_details", "reservation_id")
    rid = {"type": "string", "description": f"The reservation id, such as '{rid_examples[0]}'.", "examples": rid_examples}
    tools = [
        {
            "name": "get_reservation_details",
            "kind": "read",
            "description": "Get the details of a reservation.",
            "parameters": {"type": "object", "properties": {"reservation_id": rid}, "required": ["reservation_id"]},
            "result_example": first_result("get_reservation_details"),
        }
    ]
    if with_cancel:
        cancel_rid = dict(rid, examples=argument_examples("cancel_reservation", "reservation_id"))
        tools.append(
            {
                "name": "cancel_reservation",
                "kind": "write",
                "description": "Cancel the whole reservation.",
                "parameters": {
                    "type": "object",
                    "properties": {"reservation_id": cancel_rid},
                    "required": ["reservation_id"],
                },
                "result_example": first_result("cancel_reservation"),
            }
        )
    return tools


def information_gathering() -> CapabilitySpec:
    roles = {"read": "get_reservation_details", "key": "reservation_id"}
    params = {
        "label": "reservation id",
        "aliases": ["reservation number", "booking id", "confirmation number"],
        "answer_field": "flights.0.flight_number",
        "answer_label": "flight number of the first flight",
    }
    return CapabilitySpec(
        name="airline_ask_for_reservation_id",
        description=(
            "When the user asks about one of their reservations without saying which, ask for the reservation id, "
            "look the reservation up with get_reservation_details using the id the user gave (never a guessed or "
            "another customer's id, and without changing anything), then tell the user what they asked."
        ),
        family="information_gathering",
        domain="airline",
        tools=reservation_tools(),
        roles=roles,
        params=params,
        policy=policy_lines(
            "The agent must first obtain the user id and the reservation id.",
            "You should not provide any information, knowledge, or procedures not provided by the user or available",
            "Before taking any actions that update the booking database",
        ),
        hint="Ask the user for the reservation id before calling get_reservation_details; do not guess it.",
        knobs=ScenarioKnobs(entities=3, distractors=2, difficulty="medium"),
        check=env_check("information_gathering", roles, params),
    ).with_hash()


def aggregation_arithmetic() -> CapabilitySpec:
    roles = {"read": "get_reservation_details", "key": "reservation_id"}
    params = {"field": "payment_history.0.amount", "op": "sum", "label": "amount paid"}
    knobs = ScenarioKnobs(entities=5, requests=3, distractors=2, difficulty="medium")
    return CapabilitySpec(
        name="airline_total_paid_over_reservations",
        description=(
            "When the user asks for a total (or maximum, minimum, count) over several of their reservations, look up "
            "every reservation they named with get_reservation_details, compute the figure from the records and "
            "report it only after reading them, without changing anything or reading other reservations."
        ),
        family="aggregation_arithmetic",
        domain="airline",
        tools=reservation_tools(),
        roles=roles,
        params=params,
        policy=policy_lines(
            "You should not provide any information, knowledge, or procedures not provided by the user or available",
            "Each reservation has an reservation id",
            "Before taking any actions that update the booking database",
        ),
        hint="Call get_reservation_details for every reservation the user listed, then add up the amounts.",
        knobs=knobs,
        check=env_check("aggregation_arithmetic", roles, params, requests=knobs.requests),
    ).with_hash()


def handoff_to_human() -> CapabilitySpec:
    roles = {
        "read": "get_reservation_details",
        "handoff": "transfer_to_human_agents",
        "write": "cancel_reservation",
        "key": "reservation_id",
    }
    params = {
        # tau-bench flight statuses: a segment that is flying or has landed has been used
        "field": "flights.0.status",
        "blocked": ["landed", "flying"],
        "allowed": ["available", "on time", "delayed"],
        # keep the self-service case within the cancellation rules: business reservations can always be cancelled
        "set_fields": {"cabin": "business"},
        # and the first flight's date agrees with its status (the wiki's current time is 2024-05-15 15:00 EST)
        "blocked_fields": {"flights.0.date": "2024-05-15"},
        "allowed_fields": {"flights.0.date": "2024-05-17"},
    }
    summary = {
        "type": "string",
        "description": "A summary of the user's issue.",
        "examples": argument_examples("transfer_to_human_agents", "summary", n=1),
    }
    tools = reservation_tools() + [
        {
            "name": "transfer_to_human_agents",
            "kind": "other",
            "description": (
                "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user "
                "explicitly asks for a human agent, or if the user's issue cannot be resolved by the agent with the "
                "available tools."
            ),
            "parameters": {"type": "object", "properties": {"summary": summary}, "required": ["summary"]},
            "result_example": first_text_result("transfer_to_human_agents"),
        }
    ]
    return CapabilitySpec(
        name="airline_transfer_when_trip_flown",
        description=(
            "When the user asks to cancel a reservation, look it up first; if a segment has already been flown the "
            "agent cannot help and must transfer to a human agent with transfer_to_human_agents (never cancel it); "
            "otherwise cancel it without transferring."
        ),
        family="handoff_to_human",
        domain="airline",
        tools=tools,
        roles=roles,
        params=params,
        policy=policy_lines(
            "The current time is",
            "You should transfer the user to a human agent if and only if",
            "All reservations can be cancelled within 24 hours of booking",
            "The agent can only cancel the whole trip that is not flown.",
        ),
        hint="Call get_reservation_details first; if the first flight has landed or is flying, transfer to a human.",
        knobs=ScenarioKnobs(entities=3, distractors=2, difficulty="medium"),
        check=env_check("handoff_to_human", roles, params),
    ).with_hash()


def main() -> None:
    for build in (information_gathering, aggregation_arithmetic, handoff_to_human):
        spec = build()
        out = HERE / f"{spec.name}.json"
        out.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
