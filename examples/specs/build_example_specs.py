"""Build the hand-written example specs, one per capability family, over the real tau-bench airline domain (and one
over the real tau2-bench retail domain).

    .venv/bin/python examples/specs/build_example_specs.py [--data ../shared/data/tau-bench] [--out examples/specs]

Tools come from the DomainProfile of the gpt-4o airline runs (names, argument types, required arguments, example
values, kinds, a real result), with tau-bench's own tool descriptions; policy excerpts are quoted verbatim from
airline-wiki.md; each spec's check is `env_check(family, roles, params, requests=knobs.requests)`. `make regenerate`
runs this, then regenerates generated/ from the specs.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trace_envs.checks.trace import parse_result
from trace_envs.families import env_check
from trace_envs.spec.from_profile import tool_spec
from trace_envs.spec.model import CapabilitySpec, ScenarioKnobs, ToolSpec
from trace_envs.spec.rules import load_rules
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "tau-bench"
KEY = "reservation_id"

# tau-bench's own tool and argument descriptions (tau_bench/envs/airline/tools/*.py).
DESCRIPTIONS = {
    "get_reservation_details": "Get the details of a reservation.",
    "cancel_reservation": "Cancel the whole reservation.",
    "update_reservation_baggages": "Update the baggage information of a reservation.",
    "update_reservation_flights": "Update the flight information of a reservation.",
    "search_direct_flight": "Search direct flights between two cities on a specific date.",
    "transfer_to_human_agents": (
        "Transfer the user to a human agent, with a summary of the user's issue. Only transfer if the user explicitly "
        "asks for a human agent, or if the user's issue cannot be resolved by the agent with the available tools."
    ),
}
ARG_DESCRIPTIONS = {
    "reservation_id": "The reservation ID, such as 'ZFA04Y'.",
    "total_baggages": "The updated total number of baggage items included in the reservation.",
    "nonfree_baggages": "The updated number of non-free baggage items included in the reservation.",
    "payment_id": "The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', "
    "'certificate_7815826'.",
    "flights": "An array of objects containing details about each piece of flight in the ENTIRE new reservation. "
    "Even if the a flight segment is not changed, it should still be included in the array.",
    "cabin": "The cabin class of the reservation.",
    "summary": "A summary of the user's issue.",
    "origin": "The origin city airport in three letters, such as 'JFK'.",
    "destination": "The destination city airport in three letters, such as 'LAX'.",
    "date": "The date of the flight in the format 'YYYY-MM-DD', such as '2024-01-01'.",
}


# tau-bench's schema of one flight in update_reservation_flights' `flights` (the profile sees only "array").
FLIGHT_ITEM = {
    "type": "object",
    "properties": {
        "flight_number": {"type": "string", "description": "Flight number, such as 'HAT001'."},
        "date": {"type": "string", "description": "The date for the flight in the format 'YYYY-MM-DD', such as "
                 "'2024-05-01'."},
    },
    "required": ["flight_number", "date"],
}


class Domain:
    """The airline runs, their profile and the wiki, with helpers to cut tools and policy excerpts from them."""

    def __init__(self, data: Path):
        self.runs = load_runs([data / "gpt-4o-airline.json"]).runs
        self.profile = build_profile(self.runs)
        self.wiki = [line.strip() for line in (data / "airline-wiki.md").read_text().splitlines()]

    def results(self, name: str) -> list[Any]:
        return [parse_result(c.result) for r in self.runs for c in r.agent_calls if c.name == name and not c.error]

    def tool(self, name: str, pick: Callable[[Any], bool] | None = None, every: bool = False) -> ToolSpec:
        """The tool with tau-bench's descriptions; `pick` chooses which real records its scenarios start from;
        `every`: from every distinct result of the runs (lists too: a search's options), not the profile's sample."""
        spec = tool_spec(self.profile, name, description=DESCRIPTIONS[name])
        if every:
            found = [r for r in self.results(name) if isinstance(r, (dict, list)) and r]
            distinct = {json.dumps(r, sort_keys=True): r for r in found}
            spec.result_examples = [r for r in distinct.values() if pick is None or pick(r)][:50]
        if pick is not None:
            spec.result_examples = [r for r in spec.result_examples if pick(r)]
            spec.result_example = spec.result_examples[0] if spec.result_examples else spec.result_example
        for arg, schema in spec.properties.items():
            if arg in ARG_DESCRIPTIONS:
                schema["description"] = ARG_DESCRIPTIONS[arg]
        if "cabin" in spec.properties:
            spec.properties["cabin"]["enum"] = ["basic_economy", "economy", "business"]
        return spec

    def policy(self, *starts: str) -> str:
        """The wiki's lines that begin with each of `starts` (after the bullet), verbatim, after the line stating the
        current time (the policy's time rules are read at it)."""
        out = [next(line for line in self.wiki if line.startswith("The current time is"))]
        for start in starts:
            hits = [line for line in self.wiki if line.lstrip("- ").startswith(start)]
            if not hits:
                raise LookupError(f"no policy line starts with {start!r}")
            out.append(hits[0])
        return "\n".join(out)


def active(r: Any) -> bool:
    """A reservation that is not cancelled: the shape a lookup usually returns."""
    return isinstance(r, dict) and "status" not in r


def one_way_direct(r: Any) -> bool:
    """An active one-way reservation of one flight that the policy lets the user change (not basic economy): a
    direct flight found by a search can replace its flight."""
    return (active(r) and r.get("flight_type") == "one_way" and len(r.get("flights", [])) == 1
            and r.get("cabin") != "basic_economy")


RULES = load_rules(HERE.parent / "rules" / "airline.yaml")


def spec(name: str, description: str, family: str, tools: list[ToolSpec], roles: dict[str, str], policy: str,
         hint: str, invariants: list[Any], params: dict[str, Any] | None = None, **knobs: Any) -> CapabilitySpec:
    knob = ScenarioKnobs(**knobs)
    params = params or {}
    names = {t.name for t in tools}
    rules = RULES.model_copy(update={"writes": [r for r in RULES.writes if r.tool in names]})
    return CapabilitySpec(
        name=name, description=description, family=family, domain="airline", tools=tools, roles=roles, params=params,
        policy=policy, hint=hint, knobs=knob, rules=rules, invariants=invariants,
        check=env_check(family, roles, params, requests=knob.requests),
    ).with_hash()


def build(data: Path) -> list[CapabilitySpec]:
    d = Domain(data)
    # Scenarios start from real reservations their request makes sense on: not cancelled; no checked bags yet when
    # the user adds bags (the policy forbids removing them).
    read = d.tool("get_reservation_details", active)
    read_no_bags = d.tool("get_reservation_details", lambda r: active(r) and r.get("total_baggages") == 0)
    cancel = d.tool("cancel_reservation")
    baggages = d.tool("update_reservation_baggages")
    flights = d.tool("update_reservation_flights")
    transfer = d.tool("transfer_to_human_agents")
    search = d.tool("search_direct_flight", every=True)
    read_one_way = d.tool("get_reservation_details", one_way_direct, every=True)
    # The new flights keep the reservation's cabin, as the policy requires: the cabin is read off the reservation.
    new_flight = d.tool("update_reservation_flights")
    new_flight.arg_sources = {**new_flight.arg_sources, "cabin": "cabin"}
    new_flight.properties["flights"]["items"] = FLIGHT_ITEM
    invariants = d.profile.invariants.get(read.name, [])
    rw = lambda write: {"read": read.name, "write": write.name, "key": KEY}  # noqa: E731
    confirm = "Before taking any actions that update the booking database"
    cancel_rules = ("The agent must first obtain the user id, the reservation id, and the reason for cancellation",
                    "All reservations can be cancelled within 24 hours of booking",
                    "The agent can only cancel the whole trip that is not flown.")
    return [
        spec(
            "airline_check_cabin_before_cancel",
            "Before cancelling a reservation, look it up with get_reservation_details and check its cabin: outside "
            "the 24-hour window and without a covered reason, only business-class reservations may be cancelled; "
            "otherwise refuse and tell the user the cabin is the reason.",
            "precondition_before_write", [read, cancel], rw(cancel),
            d.policy(confirm, *cancel_rules),
            "Call get_reservation_details first and read the cabin before deciding whether to cancel.",
            invariants, params={"field": "cabin", "allowed": ["business"], "blocked": ["economy", "basic_economy"]},
        ),
        spec(
            "airline_confirm_before_baggage_update",
            "Before updating a reservation's baggage, list the action details and get an explicit yes from the user; "
            "when the user says no, make no change.",
            "confirmation_before_write", [read_no_bags, baggages], rw(baggages),
            d.policy(confirm, "The agent must first obtain the user id and the reservation id.",
                     "Change baggage and insurance"),
            "Look the reservation up, state exactly what you will change and ask the user to confirm; call "
            "update_reservation_baggages only after the user answers yes.",
            invariants, difficulty="hard",
        ),
        spec(
            "airline_cancel_every_requested_reservation",
            "When the user asks to cancel several reservations in one message, look up every one of them and cancel "
            "each the policy allows (refusing, with the reason, the one it does not), not just the first.",
            "multi_request_completion", [read, cancel], rw(cancel),
            d.policy(confirm, *cancel_rules, "The refund will go to original"),
            "The user listed several reservations: check each with get_reservation_details and handle each one "
            "before you wrap up.",
            invariants, params={"field": "cabin", "allowed": ["business"], "blocked": ["economy", "basic_economy"]},
            requests=3, distractors=2,
        ),
        spec(
            "airline_payment_id_from_reservation",
            "When the user wants to pay with the payment method already on a reservation, read the payment id from the "
            "reservation's payment history instead of guessing it.",
            "argument_grounding", [read_no_bags, baggages], {**rw(baggages), "arg": "payment_id"},
            d.policy(confirm, "The agent must first obtain the user id and the reservation id.",
                     "Change baggage and insurance",
                     "You should not provide any information, knowledge, or procedures"),
            "Call get_reservation_details and pass the payment_id of the reservation's payment_history exactly as it "
            "is returned.",
            invariants, params={"source_field": "payment_history.0.payment_id"},
        ),
        spec(
            "airline_refuse_basic_economy_flight_change",
            "Refuse to change the flights of a basic economy reservation: look it up, make no change and tell the user "
            "that the basic economy cabin is the reason; change the flights of other reservations as asked.",
            "policy_refusal", [read, flights], rw(flights),
            d.policy(confirm, "The agent must first obtain the user id and the reservation id.",
                     "Change flights: Basic economy flights cannot be modified.", "You should deny user requests"),
            "Check the cabin with get_reservation_details before changing flights: basic economy flights cannot be "
            "modified, so refuse and say why.",
            invariants, params={"field": "cabin", "blocked": ["basic_economy"], "allowed": ["economy", "business"]},
        ),
        spec(
            "airline_ask_for_reservation_id",
            "When the user asks about one of their reservations without saying which, ask for the reservation id, "
            "look the reservation up with get_reservation_details using the id the user gave (never a guessed or "
            "another customer's id, and without changing anything), then tell the user what they asked.",
            "information_gathering", [read, cancel], {"read": read.name, "key": KEY},
            d.policy("The agent must first obtain the user id and the reservation id.",
                     "You should not provide any information, knowledge, or procedures", confirm),
            "Ask the user for the reservation id before calling get_reservation_details; do not guess it.",
            invariants, params={
                "label": "reservation id",
                "aliases": ["reservation number", "booking id", "confirmation number"],
                "answer_field": "flights.0.flight_number",
                "answer_label": "flight number of the first flight",
            },
        ),
        spec(
            "airline_total_paid_over_reservations",
            "When the user asks for a total (or maximum, minimum, count) over several of their reservations, look up "
            "every reservation they named with get_reservation_details, compute the figure from the records and "
            "report it only after reading them, without changing anything or reading other reservations.",
            "aggregation_arithmetic", [read, cancel], {"read": read.name, "key": KEY},
            d.policy("You should not provide any information, knowledge, or procedures",
                     "Each reservation has an reservation id", confirm),
            "Call get_reservation_details for every reservation the user listed, then add up the amounts.",
            invariants, params={"field": "payment_history.*.amount", "op": "sum", "label": "amount paid"},
            entities=5, requests=3,
        ),
        spec(
            "airline_transfer_when_trip_flown",
            "When the user asks to cancel a reservation, look it up first; if a segment has already been flown the "
            "agent cannot help and must transfer to a human agent with transfer_to_human_agents (never cancel it); "
            "otherwise cancel it (when the policy allows) without transferring.",
            "handoff_to_human", [read, cancel, transfer],
            {"read": read.name, "handoff": transfer.name, "write": cancel.name, "key": KEY},
            d.policy(confirm, "You should transfer the user to a human agent if and only if", *cancel_rules),
            "Call get_reservation_details first; if a flight of the trip is dated before today, transfer to a human.",
            invariants,
        ),
        spec(
            "airline_pick_flight_meeting_constraints",
            "When the user wants their flight changed to one meeting their constraints (the cheapest, a departure "
            "time window, or the cheapest within a window), search the direct flights on the route and date they give, "
            "pick the one flight that meets every constraint (not the first listed or the cheapest by habit), and "
            "update the reservation with it after the user confirms.",
            "option_selection", [read_one_way, search, new_flight],
            {**rw(new_flight), "search": search.name, "arg": "flights"},
            d.policy(confirm, "The agent must first obtain the user id and the reservation id.",
                     "Change flights: Basic economy flights cannot be modified.",
                     "You should not provide any information, knowledge, or procedures"),
            "Search with search_direct_flight, compare every flight's departure time and price in the reservation's "
            "cabin against what the user asked, and pass only the flight that meets all of it.",
            invariants, params={
                "option_id": "flight_number", "cost_field": "prices.{cabin}",
                "window_field": "scheduled_departure_time_est", "cost_label": "price", "window_label": "departure time",
            },
        ),
    ]


# tau2-bench's own tool descriptions (tau2/domains/retail/tools.py).
RETAIL_DESCRIPTIONS = {
    "get_order_details": "Get the status and details of an order.",
    "cancel_pending_order": "Cancel a pending order. If the order is already processed or delivered, it cannot be "
    "cancelled.",
}


def build_retail(data: Path) -> list[CapabilitySpec]:
    """The example over tau2 retail (the gpt-4.1 runs and retail policy.md): its users ask what they cannot see,
    an order's status, and the answer is on the record."""
    runs = load_runs([data / "results" / "gpt-4.1_retail.json", data / "results" / "ft-gpt-4.1_retail.json"]).runs
    profile = build_profile(runs)
    read, cancel = (tool_spec(profile, n, description=RETAIL_DESCRIPTIONS[n]) for n in RETAIL_DESCRIPTIONS)
    lines = (data / "domains" / "retail" / "policy.md").read_text().splitlines()
    policy = "\n".join(next(line for line in lines if line.startswith(start)) for start in (
        "Once the user has been authenticated, you can provide the user with information about order",
        "You can only help one user per conversation",
        "You should deny user requests that are against this policy.",
    ))
    rules = load_rules(HERE.parent / "rules" / "retail.yaml")
    roles, params, knobs = {"read": read.name, "key": "order_id"}, {"field": "status", "label": "status"}, \
        ScenarioKnobs(entities=3)
    return [CapabilitySpec(
        name="retail_tell_order_status", family="answer_from_records", domain="retail",
        description="When the user asks about one of their orders (its status), look the order up with "
        "get_order_details and tell the user what it shows in a sentence: reading the answer and leaving it unsaid, "
        "pasting the order or reading another order earns nothing, and nothing may be changed.",
        tools=[read, cancel], roles=roles, params=params, policy=policy,
        hint="Call get_order_details with the order id the user gave, then tell the user the order's status.",
        knobs=knobs, rules=rules.model_copy(update={"writes": []}),
        invariants=profile.invariants.get(read.name, []),
        check=env_check("answer_from_records", roles, params, requests=knobs.requests),
    ).with_hash()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with gpt-4o-airline.json and airline-wiki.md")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    for s in [*build(args.data), *build_retail(args.data.parent / "tau2-bench")]:
        path = args.out / f"{s.name}.json"
        path.write_text(json.dumps(s.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        print(path)


if __name__ == "__main__":
    main()
