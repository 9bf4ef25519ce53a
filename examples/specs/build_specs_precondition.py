"""Build the hand-written precondition_before_write example spec over the real tau-bench airline data.

Run: .venv/bin/python examples/specs/build_specs_precondition.py  (rewrites the JSON file beside this script)
"""

from __future__ import annotations

import json
from pathlib import Path

from trace_envs.spec.families import env_check
from trace_envs.spec.model import CapabilitySpec

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"


def first_result(tool: str) -> dict:
    for run in json.loads(DATA.read_text()):
        for msg in run["traj"]:
            if msg["role"] == "tool" and msg["name"] == tool and msg["content"].startswith("{"):
                return json.loads(msg["content"])
    raise LookupError(tool)


def main() -> None:
    reservation = first_result("get_reservation_details")
    rid = {"type": "string", "description": "The reservation id, such as '8JX2WO'.", "examples": ["8JX2WO"]}
    roles = {"read": "get_reservation_details", "write": "cancel_reservation", "key": "reservation_id"}
    params = {"field": "cabin", "allowed": ["business"], "blocked": ["economy", "basic_economy"]}
    spec = CapabilitySpec(
        name="airline_check_cabin_before_cancel",
        description=(
            "Before cancelling a reservation, look it up with get_reservation_details and check its cabin: only "
            "business-class reservations may be cancelled for a refund outside the 24-hour window; otherwise refuse "
            "and tell the user the cabin is the reason."
        ),
        family="precondition_before_write",
        domain="airline",
        tools=[
            {
                "name": "get_reservation_details",
                "kind": "read",
                "description": "Get the details of a reservation.",
                "parameters": {"type": "object", "properties": {"reservation_id": rid}, "required": ["reservation_id"]},
                "result_example": reservation,
            },
            {
                "name": "cancel_reservation",
                "kind": "write",
                "description": "Cancel the whole reservation.",
                "parameters": {"type": "object", "properties": {"reservation_id": rid}, "required": ["reservation_id"]},
            },
        ],
        roles=roles,
        params=params,
        policy=(
            "The agent can only cancel the whole trip that is not flown. A reservation booked more than 24 hours ago "
            "may only be cancelled if the cabin is business (or the airline cancelled the flight, or the user has "
            "travel insurance and a covered reason). Look up the reservation before acting on it."
        ),
        hint="Call get_reservation_details first and read the cabin before deciding whether to cancel.",
        check=env_check("precondition_before_write", roles, params),
    ).with_hash()
    out = HERE / f"{spec.name}.json"
    out.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
