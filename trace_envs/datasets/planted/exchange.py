"""Planted task kind `exchange` (family option_selection): exchange a delivered order's item for the variant meeting
the user's constraints. Deficit `picks_first_option`: the agent takes the first variant listed."""

from __future__ import annotations

import json
import random
import re
from typing import Any, Callable

from trace_envs.datasets.planted.agent import Step, order_record
from trace_envs.datasets.planted.core import ExtraTask, PlantedKind, Scenario, orders_with, register_kind
from trace_envs.datasets.sim import STR, Builder, PlantedDeficit, fn_schema
from trace_envs.spec.rules import Condition, WriteRule
from trace_envs.trajectories.models import GroundTruthAction

SEARCH_VARIANTS = "search_variants"
EXCHANGE_TOOL = "exchange_order_item"
_COLORS = ["black", "white", "blue", "red", "green", "grey"]
_SIZES = ["S", "M", "L", "XL"]


def _exchange_request(sc: Scenario, rng: random.Random) -> dict[str, Any]:
    """A delivered order's first item, five variants of its product (distinct prices and ratings), and the user's
    constraints: the cheapest; a rating bound only one variant (not the cheapest) meets; or the cheapest above a
    bound the cheapest variant misses. The same three classes as the option-selection envs."""
    oid = orders_with(sc, "delivered")[0]
    item = sc.orders[oid]["items"][0]
    prices = rng.sample(range(1500, 30000), 5)
    ratings = rng.sample(range(30, 50), 5)
    variants = [{"item_id": str(rng.randint(10**9, 10**10 - 1)), "product_id": item["product_id"],
                 "color": rng.choice(_COLORS), "size": rng.choice(_SIZES), "price": p / 100, "rating": r / 10}
                for p, r in zip(prices, ratings)]
    cheapest = min(variants, key=lambda v: v["price"])
    by_rating = sorted(variants, key=lambda v: v["rating"])
    klass = rng.choice(["cheapest", "window", "window_cheapest"])
    if klass == "cheapest" or cheapest is by_rating[-1]:
        answer, words = cheapest, "the cheapest one"
    elif klass == "window":
        bound = (by_rating[-2]["rating"] + by_rating[-1]["rating"]) / 2
        answer, words = by_rating[-1], f"one with a rating above {bound:.2f}"
    else:
        k = by_rating.index(cheapest) + 1  # the bound sits just above the cheapest variant's rating
        bound = (by_rating[k - 1]["rating"] + by_rating[k]["rating"]) / 2
        answer = min(by_rating[k:], key=lambda v: v["price"])
        words = f"one with a rating above {bound:.2f}, the cheapest of those"
    if variants[0] is answer:  # the first listed is never the one asked for: taking it is always the deficit
        j = rng.randrange(1, len(variants))
        variants[0], variants[j] = variants[j], variants[0]
    return {"order_id": oid, "product_id": item["product_id"], "name": item["name"], "variants": variants,
            "new_item_id": answer["item_id"], "wants": words, "order": sc.orders[oid]}


def _exchange_text(a: dict[str, Any]) -> str:
    return f"exchange the {a['name']} in order {a['order_id']} for another variant: I want {a['wants']}"


def _exchange_truth(a: dict[str, Any]) -> list[GroundTruthAction]:
    return [GroundTruthAction(name=EXCHANGE_TOOL, arguments={
        "order_id": a["order_id"], "product_id": a["product_id"], "new_item_id": a["new_item_id"]})]


def _exchange_act(b: Builder, a: dict[str, Any], flags: dict[str, bool], shown: set[str], confirm: Callable) -> None:
    order = a["order"]
    b.call("get_order_details", {"order_id": a["order_id"]}, order)
    b.call(SEARCH_VARIANTS, {"product_id": a["product_id"]}, a["variants"])
    pick = a["new_item_id"]
    if flags.get("picks_first_option"):
        shown.add("picks_first_option")
        pick = a["variants"][0]["item_id"]
    confirm(f"exchange the {a['name']} in order {a['order_id']} for variant {pick}")
    args = {"order_id": a["order_id"], "product_id": a["product_id"], "new_item_id": pick}
    b.call(EXCHANGE_TOOL, args, {**order, "exchanged_for": pick})
    b.say(f"The {a['name']} in order {a['order_id']} will be exchanged for variant {pick}.")


_EXCHANGE = re.compile(r"\bexchange the .+? (?:of|in) order (#[A-Z]\d{7})")
_PRODUCT = re.compile(r"product id (\d+)")
_RATING = re.compile(r"rating (above|below) (\d+(?:\.\d+)?)")


def _exchange_plan(opening: str) -> list[tuple[str, dict[str, Any]]]:
    """The exchange a generated env's opening asks for: the order, the product, and the constraints in words."""
    m = _EXCHANGE.search(opening)
    if m is None:
        return []
    product, rating = _PRODUCT.search(opening), _RATING.search(opening)
    return [(m.group(1), {"product_id": product.group(1) if product else None,
                          "rating": (rating.group(1), float(rating.group(2))) if rating else None,
                          "cheapest": "lowest price" in opening or "cheapest" in opening})]


def _exchange_next(step: Step, flags: dict[str, bool], messages: list[dict[str, Any]],
                   confirm_then: Callable[[str, str], str]) -> str:
    """Read the order, search its product's variants, take the one meeting the constraints (the first listed with
    `picks_first_option`), confirm and exchange."""
    oid = step.order
    record = order_record(messages, oid or "")
    if record is None:
        return json.dumps({"name": "get_order_details", "arguments": {"order_id": oid}})
    if record.get("status") != "delivered":
        step.stage = "done"
        return f"Order {oid} is {record.get('status')}, not delivered, so its items cannot be exchanged."
    product = step.args.get("product_id") or (record.get("items") or [{}])[0].get("product_id")
    found = [json.loads(m["content"]) for m in messages if m.get("role") == "tool" and m.get("name") == SEARCH_VARIANTS]
    if not found:
        return json.dumps({"name": SEARCH_VARIANTS, "arguments": {"product_id": product}})
    variants = [v for v in found[-1] if isinstance(v, dict)]
    fits = variants
    if step.args.get("rating"):
        side, bound = step.args["rating"]
        fits = [v for v in variants if (v["rating"] > bound if side == "above" else v["rating"] < bound)]
    if step.args.get("cheapest") and fits:
        fits = [min(fits, key=lambda v: v["price"])]
    pick = variants[0] if flags.get("picks_first_option") else (fits[0] if len(fits) == 1 else None)
    if pick is None:
        step.stage = "done"
        return "I'm sorry, I could not find the one variant that meets everything you asked for."
    args = {"order_id": oid, "product_id": product, "new_item_id": pick["item_id"]}
    return confirm_then(f"exchange the item in order {oid} for variant {pick['item_id']}",
                        json.dumps({"name": EXCHANGE_TOOL, "arguments": args}))


register_kind(PlantedKind(
    name="exchange",
    order=1,
    share=0.12,
    exposure=frozenset({"picks_first_option", "no_confirmation"}),
    policy="""- An item of a delivered order can be exchanged for another variant of the same product: look the variants
  up with search_variants and exchange (exchange_order_item) for the one variant that meets everything the user asks
  for.
""",
    tools=(
        ("read", fn_schema(SEARCH_VARIANTS, "List the variants of a product (item id, colour, size, price, rating).",
                           {"product_id": STR}, ["product_id"])),
        ("write", fn_schema(EXCHANGE_TOOL, "Exchange a delivered order's item for another variant of the same product. "
                            "This changes the database.", {"order_id": STR, "product_id": STR, "new_item_id": STR},
                            ["order_id", "product_id", "new_item_id"])),
    ),
    deficits=(PlantedDeficit(
        "picks_first_option", "option_selection", (SEARCH_VARIANTS, EXCHANGE_TOOL, "get_order_details"), 0.9,
        "exchanges for the first variant listed instead of the one meeting the user's constraints"),),
    rules=(WriteRule(tool=EXCHANGE_TOOL, requires=[
        Condition(path="status", op="in", value=["delivered"], words="only delivered orders can be exchanged")]),),
    # Exchanges are writes like the others: the deficits about every write (no confirmation, only the first request
    # done) cover them too.
    extend_tools={"no_confirmation": (EXCHANGE_TOOL,), "stops_after_first": (EXCHANGE_TOOL,)},
    # Cov is a share of all failed runs, so the exchanges' (and the app tasks') failures dilute every other deficit's:
    # those closest to the 0.10 threshold (a forbidden cancel, a missing handoff, an invented payment id, an
    # unconfirmed write) are planted a little more often to stay recoverable.
    rates={"forbidden_write": 0.6, "no_handoff": 0.7, "hallucinated_id": 0.5, "no_confirmation": 0.3},
    task=ExtraTask(_exchange_request, _exchange_text, _exchange_truth, _exchange_act, _exchange_plan, _exchange_next),
))
