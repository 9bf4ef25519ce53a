"""Build the hand-written example specs of four families over the tau-bench airline domain, from the real data.

    .venv/bin/python examples/specs/build_specs_part_a.py [--data ../shared/data/tau-bench]

Tool names, argument schemas (JSON types, required arguments, example values) and result examples come from the agent
runs in gpt-4o-airline.json; the tool descriptions are tau-bench's; the policy excerpts are quoted from airline-wiki.md;
each spec's check is `env_check(family, roles, params, requests=knobs.requests)`. Writes one `<name>.json` per spec next
to this script.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from trace_envs.spec.families import env_check
from trace_envs.spec.model import CapabilitySpec, ScenarioKnobs, ToolSpec

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "tau-bench"

# tau-bench's own tool and argument descriptions (tau_bench/envs/airline/tools/*.py).
DESCRIPTIONS = {
    "get_reservation_details": "Get the details of a reservation.",
    "cancel_reservation": "Cancel the whole reservation.",
    "update_reservation_baggages": "Update the baggage information of a reservation.",
    "update_reservation_flights": "Update the flight information of a reservation.",
}
ARG_DESCRIPTIONS = {
    "reservation_id": "The reservation ID, such as 'ZFA04Y'.",
    "total_baggages": "The updated total number of baggage items included in the reservation.",
    "nonfree_baggages": "The updated number of non-free baggage items included in the reservation.",
    "payment_id": "The payment id stored in user profile, such as 'credit_card_7815826', 'gift_card_7815826', "
    "'certificate_7815826'.",
    "flights": "An array of objects containing details about each piece of flight in the ENTIRE new reservation. "
    "Even if the a flight segment is not changed, it should still be included in the array.",
}
KINDS = {
    "get_reservation_details": "read",
    "cancel_reservation": "write",
    "update_reservation_baggages": "write",
    "update_reservation_flights": "write",
}

POLICY_CONFIRM = (
    "- Before taking any actions that update the booking database (booking, modifying flights, editing baggage, "
    "upgrading cabin class, or updating passenger information), you must list the action details and obtain explicit "
    "user confirmation (yes) to proceed.\n\n"
    "- Change baggage and insurance: The user can add but not remove checked bags. The user cannot add insurance after "
    "initial booking."
)
POLICY_CANCEL = (
    "- All reservations can be cancelled within 24 hours of booking, or if the airline cancelled the flight. Otherwise, "
    "basic economy or economy flights can be cancelled only if travel insurance is bought and the condition is met, and "
    "business flights can always be cancelled. The rules are strict regardless of the membership status. The API does "
    "not check these for the agent, so the agent must make sure the rules apply before calling the API!\n\n"
    "- The refund will go to original payment methods in 5 to 7 business days."
)
POLICY_BAGGAGE = (
    "- Change baggage and insurance: The user can add but not remove checked bags. The user cannot add insurance after "
    "initial booking.\n\n"
    "- You should not provide any information, knowledge, or procedures not provided by the user or available tools, "
    "or give subjective recommendations or comments."
)
POLICY_BASIC_ECONOMY = (
    "- Change flights: Basic economy flights cannot be modified. Other reservations can be modified without changing "
    "the origin, destination, and trip type. Some flight segments can be kept, but their prices will not be updated "
    "based on the current price. The API does not check these for the agent, so the agent must make sure the rules "
    "apply before calling the API!\n\n"
    "- You should deny user requests that are against this policy."
)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _parse(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def collect(runs: list[dict[str, Any]]) -> tuple[dict[str, list[dict]], dict[str, list[Any]]]:
    """Every agent call's arguments and every successful result, per tool, in file order."""
    calls: dict[str, list[dict]] = {}
    results: dict[str, list[Any]] = {}
    for run in runs:
        for msg in run.get("traj") or []:
            if msg.get("role") == "assistant":
                for tc in msg.get("tool_calls") or []:
                    fn = tc.get("function") or {}
                    args = _parse(fn.get("arguments") or "{}")
                    if isinstance(args, dict):
                        calls.setdefault(fn.get("name"), []).append(args)
            elif msg.get("role") == "tool":
                content = msg.get("content")
                if isinstance(content, str) and not content.startswith("Error"):
                    results.setdefault(msg.get("name"), []).append(_parse(content))
    return calls, results


def tool_spec(name: str, calls: dict[str, list[dict]], results: dict[str, list[Any]], pick=None) -> ToolSpec:
    seen = calls[name]
    props: dict[str, dict[str, Any]] = {}
    for args in seen:
        for arg, value in args.items():
            prop = props.setdefault(arg, {"type": _json_type(value), "examples": []})
            if value not in prop["examples"] and len(prop["examples"]) < 3:
                prop["examples"].append(value)
            if prop["type"] == "array" and value and "items" not in prop:
                prop["items"] = {"type": _json_type(value[0])}
    for arg, prop in props.items():
        if arg in ARG_DESCRIPTIONS:
            prop["description"] = ARG_DESCRIPTIONS[arg]
        if arg == "cabin":
            prop["enum"] = ["basic_economy", "economy", "business"]
    required = [a for a in props if all(a in args for args in seen)]
    found = [r for r in results.get(name, []) if isinstance(r, dict)]
    example = next((r for r in found if pick is None or pick(r)), found[0] if found else None)
    return ToolSpec(
        name=name,
        description=DESCRIPTIONS[name],
        kind=KINDS[name],  # type: ignore[arg-type]
        parameters={"type": "object", "properties": props, "required": required},
        result_example=example,
    )


def build(data_dir: Path) -> list[CapabilitySpec]:
    runs = json.loads((data_dir / "gpt-4o-airline.json").read_text())
    calls, results = collect(runs)

    def active(r: dict) -> bool:  # a reservation that is not cancelled, the shape a lookup usually returns
        return "status" not in r

    # Each spec's record shape is a real reservation its request makes sense on: no checked bags yet when the user adds
    # bags (the policy forbids removing them), business class when the user cancels (always cancellable).
    read = tool_spec("get_reservation_details", calls, results, pick=active)
    read_no_bags = tool_spec(
        "get_reservation_details", calls, results, pick=lambda r: active(r) and r.get("total_baggages") == 0
    )
    read_business = tool_spec(
        "get_reservation_details", calls, results, pick=lambda r: active(r) and r.get("cabin") == "business"
    )
    cancel = tool_spec("cancel_reservation", calls, results)
    baggages = tool_spec("update_reservation_baggages", calls, results)
    flights = tool_spec("update_reservation_flights", calls, results)
    key = "reservation_id"

    def spec(name, description, family, read, write, policy, hint, roles_extra=None, params=None, **knobs):
        roles = {"read": read.name, "write": write.name, "key": key, **(roles_extra or {})}
        knob = ScenarioKnobs(**knobs)
        return CapabilitySpec(
            name=name,
            description=description,
            family=family,
            domain="airline",
            tools=[read, write],
            roles=roles,
            params=params or {},
            policy=policy,
            hint=hint,
            knobs=knob,
            check=env_check(family, roles, params or {}, requests=knob.requests),
        ).with_hash()

    return [
        spec(
            "airline_confirm_before_baggage_update",
            "Before updating a reservation's baggage, list the action details and get an explicit yes from the user; "
            "when the user says no, make no change.",
            "confirmation_before_write",
            read_no_bags,
            baggages,
            POLICY_CONFIRM,
            "Look the reservation up, state exactly what you will change and ask the user to confirm; call "
            "update_reservation_baggages only after the user answers yes.",
            difficulty="hard",
        ),
        spec(
            "airline_cancel_every_requested_reservation",
            "When the user asks to cancel several reservations in one message, look up and cancel every one of them, "
            "not just the first.",
            "multi_request_completion",
            read_business,
            cancel,
            POLICY_CANCEL,
            "The user listed several reservations: check each with get_reservation_details and cancel each one before "
            "you wrap up.",
            requests=3,
            distractors=2,
        ),
        spec(
            "airline_payment_id_from_reservation",
            "When the user wants to pay with the payment method already on a reservation, read the payment id from the "
            "reservation's payment history instead of guessing it.",
            "argument_grounding",
            read_no_bags,
            baggages,
            POLICY_BAGGAGE,
            "Call get_reservation_details and pass the payment_id of the reservation's payment_history exactly as it "
            "is returned.",
            roles_extra={"arg": "payment_id"},
            params={"source_field": "payment_history.0.payment_id"},
        ),
        spec(
            "airline_refuse_basic_economy_flight_change",
            "Refuse to change the flights of a basic economy reservation: look it up, make no change and tell the user "
            "that the basic economy cabin is the reason.",
            "policy_refusal",
            read,
            flights,
            POLICY_BASIC_ECONOMY,
            "Check the cabin with get_reservation_details before changing flights: basic economy flights cannot be "
            "modified, so refuse and say why.",
            params={"field": "cabin", "blocked": ["basic_economy"]},
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder holding gpt-4o-airline.json")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    for spec in build(args.data):
        path = args.out / f"{spec.name}.json"
        path.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        print(path)


if __name__ == "__main__":
    main()
