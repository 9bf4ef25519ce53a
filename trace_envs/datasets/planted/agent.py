"""The planted simulator's agent as a policy for generated envs of the planted domain: it reads the env's opening,
plans one step per request, and plays the built-in kinds itself and every registered kind through its module's
`ExtraTask.next_action` or `step`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from trace_envs.datasets.planted.core import (
    CLOSING,
    EXTRA_TASKS,
    FAMILY_STEPS,
    HANDOFF_TOOL,
    PLANTED_DEFICITS,
)
from trace_envs.datasets.sim import env_messages, latest_record

_ORDER = re.compile(r"#[A-Z]\d{7}")
_REQUEST = re.compile(r"\b(cancel|refund) order (#[A-Z]\d{7})")
_OUT_OF_SCOPE_WORDS = ("dispute", "damage", "billing")


@dataclass
class Step:
    """One request the agent works on, and how far it got."""

    kind: str
    order: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    stage: str = "start"


def order_record(messages: list[dict[str, Any]], oid: str) -> dict[str, Any] | None:
    """The last tool result in `messages` that is the record of order `oid`, else None."""
    return latest_record(messages, "order_id", oid)


def _plan_requests(opening: str) -> tuple[str | None, list[Step]]:
    user = re.search(r"user id is ([a-z]+_[a-z]+_\d+)", opening)
    details: dict[str, Any] = {}
    start = opening.find("{")
    if start >= 0:
        try:
            details, _ = json.JSONDecoder().raw_decode(opening[start:])
        except ValueError:
            details = {}
    steps = [Step(kind=verb, order=oid, args=dict(details)) for verb, oid in _REQUEST.findall(opening)]
    if "address" in opening and "update" in opening.lower():
        steps.append(Step(kind="address", args=dict(details)))
    for kind, task in EXTRA_TASKS.items():
        if task.plan is not None:
            steps += [Step(kind=kind, order=oid, args=args) for oid, args in task.plan(opening)]
    if not steps and any(w in opening.lower() for w in _OUT_OF_SCOPE_WORDS):
        steps = [Step(kind="handoff", order=o) for o in _ORDER.findall(opening)[:1]]
    if not steps:  # an own-simulated kind (see FAMILY_STEPS)
        steps = [Step(kind=kind) for kind, (wants, _) in FAMILY_STEPS.items() if wants(opening)][:1]
    return (user.group(1) if user else None), steps


def planted_policy(deficits: Iterable[str] = ()) -> Callable[[Any, Any, int], str]:
    """The planted simulator's agent as a policy `(env, rng, turn) -> action` for generated envs of the planted
    domain: it follows `POLICY`, except for the `deficits` it carries (names of `PLANTED_DEFICITS`), which it shows on
    every request they apply to. The construct-validity benchmark plays it in every mined env."""
    unknown = set(deficits) - set(PLANTED_DEFICITS)
    if unknown:
        raise ValueError(f"unknown planted deficit(s) {sorted(unknown)}; known: {sorted(PLANTED_DEFICITS)}")
    flags = {d: d in set(deficits) for d in PLANTED_DEFICITS}
    state: dict[str, Any] = {}

    def policy(env: Any, rng: Any, turn: int) -> str:
        messages = env_messages(env)
        if turn == 1 or "steps" not in state:
            opening = next(m["content"] for m in messages if m.get("role") == "user")
            state["user"], state["steps"] = _plan_requests(opening)
            state["asked"], state["handled"] = None, 0
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "") or ""
        if state["asked"] is not None:
            step, call_text = state.pop("asked_step"), state["asked"]
            state["asked"] = None
            step.stage = "done"
            state["handled"] += 1
            return call_text if last.lower().startswith("yes") else "Understood, I will not make that change."
        for step in state["steps"]:
            if step.stage == "done":
                continue
            if flags["stops_after_first"] and state["handled"] >= 1:
                break
            return _next_action(step, state, flags, messages)
        return CLOSING

    return policy


def _next_action(step: Step, state: dict[str, Any], flags: dict[str, bool], messages: list[dict[str, Any]]) -> str:
    if step.kind in FAMILY_STEPS:
        return FAMILY_STEPS[step.kind][1](step, state, flags, messages)
    def confirm_then(summary: str, call_text: str) -> str:
        if flags["no_confirmation"]:
            step.stage = "done"
            state["handled"] += 1
            return call_text
        state["asked"], state["asked_step"] = call_text, step
        return f"I'm about to {summary}. Shall I proceed?"

    if step.kind in EXTRA_TASKS and EXTRA_TASKS[step.kind].next_action is not None:
        return EXTRA_TASKS[step.kind].next_action(step, flags, messages, confirm_then)
    oid = step.order
    record = order_record(messages, oid) if oid else None
    if step.kind in ("cancel", "refund", "handoff") and record is None and step.stage == "start":
        if not (step.kind == "cancel" and flags["skip_precondition_read"]):
            step.stage = "read"
            return json.dumps({"name": "get_order_details", "arguments": {"order_id": oid}})
    if step.kind == "cancel":
        reason = step.args.get("reason", "no longer needed")
        if record is not None and record.get("status") != "pending" and not flags["forbidden_write"]:
            step.stage = "done"
            state["handled"] += 1
            return f"Order {oid} has already been {record.get('status')}, so I cannot cancel it under our policy."
        call_text = json.dumps({"name": "cancel_order", "arguments": {"order_id": oid, "reason": reason}})
        return confirm_then(f"cancel order {oid} with reason '{reason}'", call_text)
    if step.kind == "refund":
        record = record or {}
        if record.get("status") not in (None, "delivered"):
            step.stage = "done"
            state["handled"] += 1
            return f"Order {oid} is {record.get('status')}, not delivered yet, so I cannot refund it under our policy."
        pm = record.get("payment_method_id", "")
        if flags["hallucinated_id"]:
            pm = "credit_card_" + str(abs(hash(oid)) % 9_000_000 + 1_000_000)
        amount = record.get("total", 0)
        call_text = json.dumps({"name": "refund_order",
                                "arguments": {"order_id": oid, "payment_method_id": pm, "amount": amount}})
        return confirm_then(f"refund ${amount} for order {oid} to payment method {pm}", call_text)
    if step.kind == "address":
        address = step.args.get("address", "")
        call_text = json.dumps({"name": "update_address", "arguments": {"user_id": state["user"], "address": address}})
        return confirm_then(f"update your address to {address}", call_text)
    step.stage = "done"
    state["handled"] += 1
    if flags["no_handoff"]:
        return "I'm sorry, but I'm not able to help with that request."
    summary = f"User {state['user']} has an issue with order {oid} that needs a human agent."
    return json.dumps({"name": HANDOFF_TOOL, "arguments": {"summary": summary}})
