"""A small hand-written TraceEnv (confirmation before a write) for tests and benchmarks of the training stack, so they
do not depend on which envs have been generated. Registered as `trace-toy/confirm_refund` (not under `trace/`, so
`--all` never trains it)."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np

from trace_envs.checks.clauses import CallMade, CallRef, Check, Confirmation, Order
from trace_envs.runtime import Scenario, ToolError, TraceEnv, UserRequest
from trace_envs.spec.model import CapabilitySpec, ToolSpec

TOY_ENV_ID = "trace-toy/confirm_refund"

_SPEC = CapabilitySpec(
    name="confirm_refund",
    description="Look up the order, then get the user's explicit confirmation before refunding it.",
    family="confirmation_before_write",
    domain="retail",
    tools=[
        ToolSpec(
            name="get_order_details",
            description="Get the details of an order.",
            kind="read",
            parameters={
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "The order id, such as '#W1234'."}},
                "required": ["order_id"],
            },
        ),
        ToolSpec(
            name="refund_order",
            description="Refund a delivered order.",
            kind="write",
            parameters={
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order id."},
                    "reason": {"type": "string", "enum": ["damaged", "late", "other"], "description": "Why."},
                    "amount": {"type": "number", "description": "Amount to refund; the full price by default."},
                },
                "required": ["order_id", "reason"],
            },
        ),
    ],
    roles={"read": "get_order_details", "write": "refund_order", "key": "order_id"},
    policy="Before any refund, look up the order and ask the user to confirm the refund explicitly (yes).",
    hint="Call get_order_details, then ask the user to confirm, then call refund_order.",
    check=Check(
        clauses=[
            CallMade(id="refunded", call=CallRef(tool="refund_order", args={"order_id": {"$var": "order_id"}})),
            Order(
                id="looked_up_first",
                first=CallRef(tool="get_order_details"),
                then=CallRef(tool="refund_order"),
                join=["order_id"],
                requires=["refunded"],
            ),
            Confirmation(id="confirmed", call=CallRef(kind="write"), requires=["refunded"]),
        ]
    ),
).with_hash()


class ToyConfirmRefundEnv(TraceEnv):
    SPEC = _SPEC

    def build_scenario(self, rng: np.random.Generator) -> Scenario:
        ids = [f"#W{int(x)}" for x in rng.choice(np.arange(1000, 9999), size=3, replace=False)]
        target = ids[0]
        orders = {oid: {"order_id": oid, "status": "delivered", "price": float(rng.integers(10, 300))} for oid in ids}
        reason = ["damaged", "late", "other"][int(rng.integers(0, 3))]
        opening = f"Hi, I'd like a refund for order {target}, the reason is: {reason}."
        ask = f"I found order {target}. Shall I proceed with the refund ({reason})? Please confirm."
        get = json.dumps({"name": "get_order_details", "arguments": {"order_id": target}})
        refund = json.dumps({"name": "refund_order", "arguments": {"order_id": target, "reason": reason}})
        return Scenario(
            state={"orders": orders, "refunds": []},
            bindings={"order_id": target},
            opening=opening,
            requests=[UserRequest.write("refund_order", "order_id", target)],
            oracle=[get, ask, refund],
            mutants={"no_confirm": [get, refund], "no_lookup": [ask, refund], "text_only": [ask]},
        )

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        order = state["orders"].get(args.get("order_id"))
        if order is None:
            raise ToolError(f"order {args.get('order_id')!r} not found")
        if name == "get_order_details":
            return order
        if name == "refund_order":
            state["refunds"].append({"order_id": order["order_id"], "reason": args["reason"]})
            order["status"] = "refunded"
            return {"status": "refunded", "order_id": order["order_id"]}
        raise ToolError(f"unknown tool {name}")


def register_toy() -> str:
    """Register the toy env (idempotent) and return its id."""
    if TOY_ENV_ID not in gym.registry:
        gym.register(id=TOY_ENV_ID, entry_point=ToyConfirmRefundEnv)
    return TOY_ENV_ID
