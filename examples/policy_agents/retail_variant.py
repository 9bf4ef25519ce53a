"""A scripted retail agent that changes an order's item to the variant the user asks for, as tau2's retail policy says.

It reads only what any agent sees (the conversation and tool results) and acts as the policy says:

- it looks the order up and finds the item the user names ("change the water bottle in my order #W1234567 ...");
- it looks up that item's product and, among its variants, takes the one whose options hold every value the user
  named ("capacity 1000ml and color red") and that is available ("each item can be modified to an available new item
  of the same product");
- before the write it lists the action's details and asks for an explicit yes; the refund or charge goes to the
  order's payment method, as the user asks.

`make_policy(pick)` returns a policy with the signature of trace_envs' scripted policies: `pick="careful"` is the agent
above; `"first"` takes the first variant listed, `"unavailable"` a variant with the named values that is not
available (else the first other), `"other"` a variant without them: the habits a mined env must not pay.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ASK = re.compile(r"change the (.+?) in my order (\S+) to one with (.+?)\.(?:\s|$)")


def _tool_results(env) -> list[Any]:
    out = []
    for m in env.messages:
        if m["role"] == "tool" and isinstance(m.get("content"), str):
            try:
                out.append(json.loads(m["content"]))
            except ValueError:
                out.append(None)
    return out


def _named(text: str, keys: list[str]) -> dict[str, str]:
    """`capacity 1000ml, material glass and color red` with the variants' option keys -> {key: value}."""
    out = {}
    for part in re.split(r", | and ", text):
        key = max((k for k in keys if part.lower().startswith(k.lower() + " ")), key=len, default=None)
        if key is not None:
            out[key] = part[len(key) + 1:].strip()
    return out


def _pick(variants: list[dict[str, Any]], named: dict[str, str], pick: str) -> dict[str, Any]:
    fits = [v for v in variants if all(str(v["options"].get(k, "")).lower() == x.lower() for k, x in named.items())]
    if pick == "first":
        return variants[0]
    if pick == "unavailable":
        return next((v for v in fits if not v.get("available")), next(v for v in variants if v not in fits))
    if pick == "other":
        return next(v for v in variants if v not in fits)
    available = [v for v in fits if v.get("available")]
    assert len(available) == 1, f"the user's words fit {len(available)} available variants"
    return available[0]


def make_policy(pick: str = "careful"):
    memo: dict[str, Any] = {}

    def policy(env, rng, turn: int) -> str:
        opening = next(m["content"] for m in env.messages if m["role"] == "user")
        ask = _ASK.search(opening)
        assert ask, opening
        name, order_id, wanted = ask.groups()
        if turn == 1:
            memo.clear()
            return json.dumps({"name": "get_order_details", "arguments": {"order_id": order_id}})
        if turn == 2:
            order = _tool_results(env)[-1]
            item = next(i for i in order["items"] if i["name"].lower() == name.lower())
            memo.update(order=order, item=item)
            return json.dumps({"name": "get_product_details", "arguments": {"product_id": item["product_id"]}})
        if turn == 3:
            product = _tool_results(env)[-1]
            variants = list(product["variants"].values())
            named = _named(wanted, sorted({k for v in variants for k in v["options"]}))
            chosen = _pick(variants, named, pick)
            payment = memo["order"]["payment_history"][0]["payment_method_id"]
            memo["args"] = {"order_id": order_id, "item_ids": [memo["item"]["item_id"]],
                            "new_item_ids": [chosen["item_id"]], "payment_method_id": payment}
            return (f"Here is what I will do: modify pending order items for order id {order_id} with "
                    f"{json.dumps({k: v for k, v in memo['args'].items() if k != 'order_id'}, sort_keys=True)}. "
                    "Do you confirm that I should proceed (yes/no)?")
        if turn == 4:
            return json.dumps({"name": "modify_pending_order_items", "arguments": memo["args"]})
        return "Your order has been updated. Is there anything else? If not, have a nice day!"

    return policy
