"""Test doubles for the training stack, used by tests and benchmarks only (they do not ship in the wheel).

- `ToyConfirmRefundEnv`, registered as `trace-toy/confirm_refund` by `register_toy()`: a small hand-written TraceEnv
  (confirmation before a write), so training tests do not depend on which envs have been generated; not under
  `trace/`, so `--all` never trains it.
- `OracleScript`: completions that play an env's oracle conversation (or junk), for scripted GRPO runs.
- `scripted_trainer_class`: a GRPOTrainer whose generation is replaced by such a script.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

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


class OracleScript:
    """Completions for a scripted GRPO run in the bridge's ChatML form: on the first turn every `junk_every`-th rollout
    answers junk (a plain message, which ends it with reward 0); the others play the env's oracle conversation turn by
    turn (`oracle_conversation`), so rewards differ inside each group. `script(prompt_text, index) -> completion`."""

    def __init__(self, env_id: str, seeds: Iterable[int], *, junk_every: int = 2, eos: str = "<|im_end|>",
                 junk: str = "Sorry, I cannot help with that."):
        from trace_envs.integrations.trl import bridge_class, oracle_conversation

        cls = bridge_class(env_id)
        # Several seeds may share an opening (e.g. the user gives the id only when asked): keep every episode and
        # tell them apart by the tool results already in the prompt.
        self.plans: list[tuple[str, list[dict[str, Any]], list[str]]] = []
        for seed in seeds:
            conv = oracle_conversation(env_id, int(seed), factory=cls)
            msgs = conv["messages"]
            results = [m["content"] for m in msgs if m["role"] == "tool"]
            self.plans.append((msgs[1]["content"], [m for m in msgs if m["role"] == "assistant"], results))
        self.junk_every = junk_every
        self.eos = eos
        self.junk = junk

    @staticmethod
    def render(msg: dict[str, Any]) -> str:
        if msg.get("tool_calls"):
            return "\n".join(
                "<tool_call>\n" + json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                + "\n</tool_call>"
                for c in msg["tool_calls"]
            )
        return str(msg.get("content") or "")

    def __call__(self, prompt_text: str, index: int) -> str:
        turn = prompt_text.count("<|im_start|>assistant") - 1
        cands = [p for p in self.plans if p[0] in prompt_text]
        if not cands:
            return self.junk + self.eos
        best = max(len(p[0]) for p in cands)
        cands = [p for p in cands if len(p[0]) == best]
        plan = max(cands, key=lambda p: sum(r in prompt_text for r in p[2]))[1]
        if turn <= 0 and self.junk_every and index % self.junk_every == self.junk_every - 1:
            return self.junk + self.eos
        msg = plan[min(max(turn, 0), len(plan) - 1)]
        return self.render(msg) + self.eos


def scripted_trainer_class(script: Callable[[str, int], str], base: type | None = None) -> type:
    """A GRPOTrainer whose generation is replaced by `script(prompt_text, index) -> completion text` (the way TRL's
    own tests stand in for a model that cannot yet earn reward): everything else, the bridge, the tool loop, rewards,
    advantages, the LoRA update, runs for real."""
    from trl import GRPOTrainer

    class ScriptedGRPOTrainer(base or GRPOTrainer):  # type: ignore[misc, valid-type]
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            tok = self._tokenizer
            out = []
            for i, ids in enumerate(prompt_ids):
                text = tok.decode(list(ids), skip_special_tokens=False)
                out.append(tok(script(text, i), add_special_tokens=False)["input_ids"])
            return out, None

    return ScriptedGRPOTrainer
