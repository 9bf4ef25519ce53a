"""The retail planted domain's core: its base policy, tools, deficits, scenario and rules, the built-in task kinds
(cancel, refund, address, multi, forbidden, handoff) and the simulator that plays them, and the registry through which
every other task kind (one module each in this package) adds its pieces: `register_kind`.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from trace_envs.datasets import sim
from trace_envs.datasets.sim import STR, Builder, PlantedDeficit, fn_schema
from trace_envs.spec.rules import Condition, PolicyRules, WriteRule
from trace_envs.trajectories.models import GroundTruthAction, Run

# The built-in kinds' policy; each registered kind appends its piece, in kind order (`POLICY` is the whole text).
_BASE_POLICY = """# Retail agent policy

As a retail agent you help users cancel pending orders, refund delivered orders and update their address.

- Authenticate the user first: look up the user with get_user_details.
- Before cancelling an order, look up the order with get_order_details and check its status. Only pending orders can be
  cancelled. A delivered order can never be cancelled: refuse the request.
- A refund goes to the order's original payment method, as listed in the order details, for the order total.
- Before any action that changes the database (cancel, refund, address update), list the action details and obtain
  explicit user confirmation (yes) to proceed.
- Handle every request the user makes in the conversation.
- Transfer the user to a human agent with transfer_to_human_agents if and only if the request cannot be handled with
  your tools (e.g. a billing dispute or a damaged-item claim).
"""

WRITE_TOOLS = ("cancel_order", "refund_order", "update_address")
READ_TOOLS = ("get_user_details", "get_order_details", "get_order_tracking")
HANDOFF_TOOL = "transfer_to_human_agents"

_BASE_TOOLS: list[tuple[str, dict[str, Any]]] = [  # (tool kind, schema)
    ("read", fn_schema("get_user_details", "Get the details of a user, including their orders.", {"user_id": STR},
                       ["user_id"])),
    ("read", fn_schema("get_order_details", "Get the status, items, total and payment method of an order.",
                       {"order_id": STR}, ["order_id"])),
    ("read", fn_schema("get_order_tracking", "Get the shipment tracking events of an order.", {"order_id": STR},
                       ["order_id"])),
    ("write", fn_schema("cancel_order", "Cancel a pending order. This changes the database.",
                        {"order_id": STR, "reason": {"type": "string", "enum": ["no longer needed", "ordered by mistake"]}},
                        ["order_id", "reason"])),
    ("write", fn_schema("refund_order", "Refund a delivered order to a payment method. This changes the database.",
                        {"order_id": STR, "payment_method_id": STR, "amount": {"type": "number"}},
                        ["order_id", "payment_method_id", "amount"])),
    ("write", fn_schema("update_address", "Update the default address of a user. This changes the database.",
                        {"user_id": STR, "address": STR}, ["user_id", "address"])),
    ("other", fn_schema("transfer_to_human_agents", "Transfer the user to a human agent, with a summary of the issue.",
                        {"summary": STR}, ["summary"])),
]

_BASE_DEFICITS = [
    PlantedDeficit("skip_precondition_read", "precondition_before_write", ("get_order_details", "cancel_order"),
                   0.3, "cancels an order without looking it up first"),
    PlantedDeficit("no_confirmation", "confirmation_before_write", WRITE_TOOLS, 0.25,
                   "performs a write without asking the user for confirmation"),
    PlantedDeficit("stops_after_first", "multi_request_completion", WRITE_TOOLS, 0.7,
                   "handles only the first of several requests"),
    PlantedDeficit("hallucinated_id", "argument_grounding",
                   ("refund_order", "get_order_details", "get_user_details"), 0.4,
                   "refunds to an invented payment method id instead of the one in the order"),
    PlantedDeficit("forbidden_write", "policy_refusal", ("cancel_order", "get_order_details", "get_user_details"),
                   0.5, "cancels a delivered order, which the policy forbids"),
    PlantedDeficit("no_handoff", "handoff_to_human",
                   (HANDOFF_TOOL, "get_user_details", "get_order_details"), 0.6,
                   "does not transfer to a human agent when the request is out of scope"),
]
DECOYS: dict[str, PlantedDeficit] = {
    "skip_optional_tracking": PlantedDeficit(
        "skip_optional_tracking", "precondition_before_write", ("get_order_tracking",) + WRITE_TOOLS, 0.5,
        "skips the optional tracking lookup (does not cause failure)", decoy=True),
}
NOISE_RATE = 0.06

# built-in task kind -> share of runs (each registered kind adds its share)
_BASE_MIX = {"cancel": 0.18, "refund": 0.18, "address": 0.08, "multi": 0.26, "forbidden": 0.14, "handoff": 0.16}

# The deficits that can make a request of each kind fail, i.e. the capabilities it exercises. A task's routing truth is
# the union over its requests (plus `stops_after_first` when it has several): routing it to an adapter for any of them
# is right, anything else is wrong.
_BASE_EXPOSURE = {
    "cancel": frozenset({"skip_precondition_read", "no_confirmation"}),
    "forbidden": frozenset({"forbidden_write", "skip_precondition_read", "no_confirmation"}),
    "refund": frozenset({"hallucinated_id", "no_confirmation"}),
    "address": frozenset({"no_confirmation"}),
    "handoff": frozenset({"no_handoff"}),
}

# The planted POLICY's conditions for its writes, as data (what `trace-envs mine --rules` takes for real domains): the
# miner's specs carry them so the planted envs hold the policy's other conditions neutral.
_BASE_RULES = [
    WriteRule(tool="cancel_order", requires=[
        Condition(path="status", op="in", value=["pending"], words="only pending orders can be cancelled")]),
    WriteRule(tool="refund_order", requires=[
        Condition(path="status", op="in", value=["delivered"], words="refunds are for delivered orders")]),
]

_FIRST = ["Ava", "Liam", "Noah", "Mia", "Ethan", "Sofia", "Lucas", "Yara", "Omar", "Chen", "Ines", "Raj"]
_LAST = ["Garcia", "Smith", "Kim", "Nguyen", "Patel", "Rossi", "Müller", "Silva", "Haddad", "Lopez"]
_STREETS = ["Oak St", "Maple Ave", "Sunset Dr", "Pine Rd", "Lake Blvd", "Hill Ct", "River Ln"]
_CITIES = [("Austin", "TX", "787"), ("Denver", "CO", "802"), ("Seattle", "WA", "981"), ("Boston", "MA", "021")]
_OUT_OF_SCOPE = [
    "I want to dispute a charge on my credit card statement for order {oid}.",
    "The item in order {oid} arrived damaged and I want to file a damage claim.",
    "I need to speak with someone about a billing error on order {oid}.",
]
_REASONS = ["no longer needed", "ordered by mistake"]
_PRODUCTS = ["desk lamp", "water bottle", "hiking boots", "office chair", "t-shirt", "headphones", "backpack"]
CLOSING = "You're welcome, have a great day!"


@dataclass
class Scenario:
    """One run's user and their four orders (pending, delivered, pending, delivered)."""

    user_id: str
    name: str
    address: str
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)


# ---- the registry of task kinds beyond the built-in ones --------------------------------------------------------------
@dataclass(frozen=True)
class ExtraTask:
    """A task kind the built-in simulator plays among its requests: its request's arguments, the user's words for it,
    the evaluator's ground truth, and the scripted agent's actions (`act(builder, args, flags, shown, confirm)`,
    adding to `shown` each deficit that showed). As a policy in generated envs (`planted_policy`): `plan(opening)`
    gives the (order id, args) of each such request in an env's opening, `next_action(step, flags, messages,
    confirm_then)` the agent's next action on one."""

    request: Callable[[Scenario, random.Random], dict[str, Any]]
    text: Callable[[dict[str, Any]], str]
    truth: Callable[[dict[str, Any]], list[GroundTruthAction]]
    act: Callable[..., None]
    plan: Callable[[str], list[tuple[str, dict[str, Any]]]] | None = None
    next_action: Callable[..., str] | None = None


@dataclass(frozen=True)
class PlantedKind:
    """Everything one planted task kind adds to the domain; `register_kind` puts it in the shared tables.

    `order` places its pieces (policy text, tools, deficits, share, rules) after the built-in kinds' and among the
    other registered kinds' (lower first, then by name), so the tables do not depend on import order. `share` is its
    share of runs, taken from `share_from` (a kind) when given, else added. `exposure` names the deficits that can
    make it fail (its routing truth). `extend_tools` adds tools to other deficits' (a write deficit that covers this
    kind's write too); `rates` sets other deficits' rates (a kind's failures dilute the others' share of failed runs).

    Played either by the built-in simulator (`task`, an `ExtraTask`) or by its own (`simulate(run index, rng,
    scenario, deficit flags, noise rate) -> (run, truth)`, which `finish` helps end); in generated envs, an own-simulated
    kind's agent is `step(step, policy state, deficit flags, messages) -> action` on openings `wants(opening)` accepts.
    """

    name: str
    order: int
    share: float
    exposure: frozenset[str]
    policy: str = ""
    tools: tuple[tuple[str, dict[str, Any]], ...] = ()  # (tool kind: read, write or other; schema)
    deficits: tuple[PlantedDeficit, ...] = ()
    rules: tuple[WriteRule, ...] = ()
    share_from: str | None = None
    extend_tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    rates: Mapping[str, float] = field(default_factory=dict)
    task: ExtraTask | None = None
    simulate: Callable[..., tuple[Run, dict[str, Any]]] | None = None
    wants: Callable[[str], bool] | None = None
    step: Callable[..., str] | None = None


KINDS: dict[str, PlantedKind] = {}
POLICY = _BASE_POLICY
TOOLS: list[dict[str, Any]] = []
TOOL_KINDS: dict[str, str] = {}
PLANTED_DEFICITS: dict[str, PlantedDeficit] = {}
TASK_MIX: dict[str, float] = {}
REQUEST_EXPOSURE: dict[str, frozenset[str]] = {}
PLANTED_RULES = PolicyRules(confirm_writes=True, identify_user="user_id", writes=[])
EXTRA_TASKS: dict[str, ExtraTask] = {}
# Own-simulated kinds: kind -> simulate; and how the planted agent plays them in an env: kind -> (wants, step).
FAMILY_TASKS: dict[str, Callable[..., tuple[Run, dict[str, Any]]]] = {}
FAMILY_STEPS: dict[str, tuple[Callable[[str], bool], Callable[..., str]]] = {}


def register_kind(kind: PlantedKind) -> PlantedKind:
    """Add a planted task kind (one module of this package calls this once) and rebuild the shared tables."""
    if kind.name in _BASE_MIX or kind.name in KINDS:
        raise ValueError(f"planted task kind {kind.name!r} is already defined")
    if (kind.task is None) == (kind.simulate is None):
        raise ValueError(f"planted task kind {kind.name!r}: give exactly one of task (ExtraTask) or simulate")
    if kind.simulate is not None and (kind.wants is None or kind.step is None):
        raise ValueError(f"planted task kind {kind.name!r}: a kind with its own simulate needs wants and step")
    KINDS[kind.name] = kind
    _assemble()
    return kind


def _assemble() -> None:
    """Rebuild every shared table, in place (importers hold these objects), from the built-ins and the kinds in order;
    `POLICY`, a string, is rebound."""
    global POLICY
    kinds = sorted(KINDS.values(), key=lambda k: (k.order, k.name))
    POLICY = _BASE_POLICY + "".join(k.policy for k in kinds)
    tools = _BASE_TOOLS + [t for k in kinds for t in k.tools]
    TOOLS[:] = [schema for _, schema in tools]
    TOOL_KINDS.clear()
    TOOL_KINDS.update((schema["function"]["name"], what) for what, schema in tools)
    PLANTED_DEFICITS.clear()
    PLANTED_DEFICITS.update((d.name, d) for d in _BASE_DEFICITS + [d for k in kinds for d in k.deficits])
    for k in kinds:
        for name, extra in k.extend_tools.items():
            d = PLANTED_DEFICITS[name]
            PLANTED_DEFICITS[name] = dataclasses.replace(d, tools=d.tools + extra)
        for name, rate in k.rates.items():
            PLANTED_DEFICITS[name] = dataclasses.replace(PLANTED_DEFICITS[name], rate=rate)
    TASK_MIX.clear()
    TASK_MIX.update(_BASE_MIX)
    for k in kinds:
        TASK_MIX[k.name] = k.share
        if k.share_from is not None:
            TASK_MIX[k.share_from] -= k.share
    REQUEST_EXPOSURE.clear()
    REQUEST_EXPOSURE.update(_BASE_EXPOSURE)
    REQUEST_EXPOSURE.update((k.name, frozenset(k.exposure)) for k in kinds)
    PLANTED_RULES.writes[:] = _BASE_RULES + [r for k in kinds for r in k.rules]
    EXTRA_TASKS.clear()
    EXTRA_TASKS.update((k.name, k.task) for k in kinds if k.task is not None)
    FAMILY_TASKS.clear()
    FAMILY_TASKS.update((k.name, k.simulate) for k in kinds if k.simulate is not None)
    FAMILY_STEPS.clear()
    FAMILY_STEPS.update((k.name, (k.wants, k.step)) for k in kinds if k.simulate is not None)


_assemble()


# ---- the simulator ----------------------------------------------------------------------------------------------------
def _scenario(rng: random.Random) -> Scenario:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    user_id = f"{first.lower()}_{last.lower().replace('ü', 'u')}_{rng.randint(1000, 9999)}"
    city, state, zip3 = rng.choice(_CITIES)
    sc = Scenario(user_id, f"{first} {last}",
                  f"{rng.randint(1, 999)} {rng.choice(_STREETS)}, {city}, {state} {zip3}{rng.randint(10, 99)}")
    for status in ("pending", "delivered", "pending", "delivered"):
        oid = f"#W{rng.randint(1_000_000, 9_999_999)}"
        while oid in sc.orders:  # a repeated id would overwrite an order and leave a task without the one it needs
            oid = f"#W{rng.randint(1_000_000, 9_999_999)}"
        pm = f"{rng.choice(['credit_card', 'paypal', 'gift_card'])}_{rng.randint(1_000_000, 9_999_999)}"
        sc.orders[oid] = {
            "order_id": oid,
            "user_id": user_id,
            "status": status,
            "items": [{"product_id": str(rng.randint(10**9, 10**10 - 1)), "name": rng.choice(_PRODUCTS),
                       "price": round(rng.uniform(10, 400), 2)} for _ in range(rng.choice((1, 2, 3)))],
            "payment_method_id": pm,
        }
        sc.orders[oid]["total"] = round(sum(i["price"] for i in sc.orders[oid]["items"]), 2)
    return sc


def orders_with(sc: Scenario, status: str) -> list[str]:
    """The scenario's order ids with this status, in order."""
    return [o for o, d in sc.orders.items() if d["status"] == status]


def user_record(sc: Scenario) -> dict[str, Any]:
    """What get_user_details returns for the scenario's user."""
    return {"user_id": sc.user_id, "name": sc.name, "address": sc.address, "orders": list(sc.orders)}


def _requests(kind: str, sc: Scenario, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    if kind in EXTRA_TASKS:
        return [(kind, EXTRA_TASKS[kind].request(sc, rng))]
    pending, delivered = orders_with(sc, "pending"), orders_with(sc, "delivered")
    new_addr = f"{rng.randint(1, 999)} {rng.choice(_STREETS)}, {rng.choice(_CITIES)[0]}, TX 78{rng.randint(100, 999)}"
    one = {
        "cancel": ("cancel", {"order_id": pending[0], "reason": rng.choice(_REASONS)}),
        "refund": ("refund", {"order_id": delivered[0]}),
        "address": ("address", {"address": new_addr}),
    }
    if kind in one:
        return [one[kind]]
    if kind == "forbidden":
        return [("forbidden", {"order_id": delivered[0], "reason": rng.choice(_REASONS)})]
    if kind == "handoff":
        return [("handoff", {"order_id": rng.choice(delivered)})]
    # multi (and the own-simulated kinds, which draw the same before ignoring them): two or three different requests
    pool = [one["cancel"], one["refund"], one["address"],
            ("cancel", {"order_id": pending[1], "reason": rng.choice(_REASONS)})]
    rng.shuffle(pool)
    return pool[: rng.choice((2, 2, 3))]


def _request_text(kind: str, a: dict[str, Any], rng: random.Random) -> str:
    if kind in EXTRA_TASKS:
        return EXTRA_TASKS[kind].text(a)
    if kind == "cancel":
        return f"cancel order {a['order_id']} because it is {a['reason']}"
    if kind == "forbidden":  # the user knows the order arrived: the request itself tells a router what is at stake
        return f"cancel order {a['order_id']}, which was already delivered, because it is {a['reason']}"
    if kind == "refund":
        return f"get a refund for order {a['order_id']} to the original payment method"
    if kind == "address":
        return f"change my address to {a['address']}"
    return rng.choice(_OUT_OF_SCOPE).format(oid=a["order_id"])


def _ground_truth(reqs: list[tuple[str, dict[str, Any]]], sc: Scenario) -> list[GroundTruthAction]:
    """What the evaluator expects for every request (a forbidden cancel expects nothing)."""
    gt = []
    for rk, a in reqs:
        if rk in EXTRA_TASKS:
            gt += EXTRA_TASKS[rk].truth(a)
        elif rk == "cancel":
            gt.append(GroundTruthAction(name="cancel_order", arguments={"order_id": a["order_id"], "reason": a["reason"]}))
        elif rk == "refund":
            o = sc.orders[a["order_id"]]
            gt.append(GroundTruthAction(name="refund_order", arguments={
                "order_id": o["order_id"], "payment_method_id": o["payment_method_id"], "amount": o["total"]}))
        elif rk == "address":
            gt.append(GroundTruthAction(name="update_address", arguments={"user_id": sc.user_id, "address": a["address"]}))
        elif rk == "handoff":
            summary = f"User {sc.user_id} has an issue with order {a['order_id']} that needs a human agent."
            gt.append(GroundTruthAction(name=HANDOFF_TOOL, arguments={"summary": summary}))
    return gt


def builder(rng: random.Random) -> Builder:
    """A run builder opening with the domain's whole policy."""
    return Builder(rng, POLICY)


def finish(run_idx: int, rng: random.Random, b: Builder, kind: str, shown: Iterable[str], noise_rate: float,
           skipped_tracking: bool, request_kinds: list[str], ground_truth: list[GroundTruthAction],
           opening: str) -> tuple[Run, dict[str, Any]]:
    """End a retail run (see `sim.finish_run`); its truth adds whether the decoy read was skipped and the deficits its
    requests expose."""
    return sim.finish_run(run_idx, rng, b, kind, shown, noise_rate, domain="retail", tools=TOOLS,
                          ground_truth=ground_truth, instruction=opening, skipped_tracking=skipped_tracking,
                          exposed=exposed_deficits(request_kinds))


def _simulate(run_idx: int, rng: random.Random, rates: dict[str, float], decoy_rate: float, noise_rate: float,
              task_mix: dict[str, float]) -> tuple[Run, dict[str, Any]]:
    kinds, weights = zip(*task_mix.items())
    kind = rng.choices(kinds, weights)[0]
    sc = _scenario(rng)
    reqs = _requests(kind, sc, rng)
    flags = {d: rng.random() < r for d, r in rates.items()}
    skip_tracking = rng.random() < decoy_rate
    if kind in FAMILY_TASKS:  # a task kind with its own simulator (its module in this package)
        return FAMILY_TASKS[kind](run_idx, rng, sc, flags, noise_rate)
    b = builder(rng)
    shown: set[str] = set()  # deficits that showed in this run

    gt = _ground_truth(reqs, sc)
    texts = [_request_text(k, a, rng) for k, a in reqs]
    if len(texts) == 1:
        opening = f"Hi, I'm {sc.name}, user id {sc.user_id}. I'd like to {texts[0]}."
        if reqs[0][0] == "handoff":
            opening = f"Hi, I'm {sc.name}, user id {sc.user_id}. {texts[0]}"
    else:
        opening = f"Hi, I'm {sc.name}, user id {sc.user_id}. I have a few things: I'd like to " + "; and ".join(texts) + "."
    b.user(opening)
    user_rec = user_record(sc)
    b.call("get_user_details", {"user_id": sc.user_id}, user_rec)
    b.say(f"Thanks {sc.name.split()[0]}, I found your account.")

    def confirm(summary: str) -> None:
        if flags["no_confirmation"]:
            shown.add("no_confirmation")
            return
        b.say(f"I'm about to {summary}. Shall I proceed?")
        b.user(rng.choice(["Yes, please go ahead.", "Yes.", "Yes, that's right, proceed."]))

    for i, (rk, a) in enumerate(reqs):
        if i >= 1 and flags["stops_after_first"]:
            shown.add("stops_after_first")
            break
        oid = a.get("order_id")
        order = sc.orders.get(oid) if oid else None
        if rk in ("cancel", "refund", "forbidden") and not skip_tracking:
            b.call("get_order_tracking", {"order_id": oid},
                   {"order_id": oid, "events": [{"status": order["status"], "date": "2024-05-1" + str(rng.randint(0, 9))}]})
        if rk in ("cancel", "forbidden"):
            read = not flags["skip_precondition_read"]
            if read:
                b.call("get_order_details", {"order_id": oid}, order)
            else:
                shown.add("skip_precondition_read")
            if rk == "forbidden" and read and not flags["forbidden_write"]:
                b.say(f"Order {oid} has already been delivered, so I cannot cancel it under our policy.")
                continue
            if rk == "forbidden":
                shown.add("forbidden_write")
            confirm(f"cancel order {oid} with reason '{a['reason']}'")
            b.call("cancel_order", {"order_id": oid, "reason": a["reason"]}, {**order, "status": "cancelled"})
            b.say(f"Order {oid} is now cancelled.")
        elif rk == "refund":
            b.call("get_order_details", {"order_id": oid}, order)
            pm = order["payment_method_id"]
            if flags["hallucinated_id"]:
                shown.add("hallucinated_id")
                pm = f"credit_card_{rng.randint(1_000_000, 9_999_999)}"
            confirm(f"refund ${order['total']} for order {oid} to payment method {pm}")
            b.call("refund_order", {"order_id": oid, "payment_method_id": pm, "amount": order["total"]},
                   {**order, "status": "refunded"})
            b.say(f"The refund of ${order['total']} for order {oid} has been issued.")
        elif rk in EXTRA_TASKS:
            EXTRA_TASKS[rk].act(b, a, flags, shown, confirm)
        elif rk == "address":
            confirm(f"update your address to {a['address']}")
            b.call("update_address", {"user_id": sc.user_id, "address": a["address"]},
                   {**user_rec, "address": a["address"]})
            b.say("Your address has been updated.")
        else:  # handoff
            summary = f"User {sc.user_id} has an issue with order {oid} that needs a human agent."
            b.call("get_order_details", {"order_id": oid}, order)
            if flags["no_handoff"]:
                shown.add("no_handoff")
                b.say("I'm sorry, but I'm not able to help with that request.")
            else:
                b.call(HANDOFF_TOOL, {"summary": summary}, "Transfer successful")
                b.say("I've transferred you to a human agent who will help you further.")
    if kind != "handoff":
        b.user("Thanks, that's all.")
        b.say(CLOSING)
    return finish(run_idx, rng, b, kind, shown, noise_rate, skip_tracking, [rk for rk, _ in reqs], gt, opening)


def iter_planted(n_runs: int, seed: int = 0, *, rates: dict[str, float] | None = None, decoy_rate: float | None = None,
                 noise_rate: float = NOISE_RATE, task_mix: dict[str, float] | None = None,
                 start: int = 0) -> Iterator[Run]:
    """Yield planted runs one at a time (constant memory); run `i` depends only on (seed, i)."""
    r = {name: d.rate for name, d in PLANTED_DEFICITS.items()}
    r.update(rates or {})
    dr = DECOYS["skip_optional_tracking"].rate if decoy_rate is None else decoy_rate
    mix = task_mix or TASK_MIX
    yield from sim.seeded_runs(lambda i, rng: _simulate(i, rng, r, dr, noise_rate, mix)[0], n_runs, seed, start)


def generate_planted(n_runs: int, seed: int = 0, **kwargs: Any) -> list[Run]:
    """`n_runs` planted runs (see `iter_planted` for the options). Deterministic for a given seed."""
    return list(iter_planted(n_runs, seed, **kwargs))


def planted_file(path: str | Path, n_runs: int, seed: int = 0) -> Path:
    """The planted data set as OpenAI-messages JSONL at `path`, written (atomically) when it is not there yet: a rerun
    of `trace-envs run` reads the runs it mined before."""
    path = Path(path)
    if not path.is_file():
        sim.write_jsonl(generate_planted(n_runs, seed), path)
    return path


def exposed_deficits(request_kinds: list[str]) -> list[str]:
    """The planted deficits a task with these requests can fail from (its routing truth)."""
    out: set[str] = {"stops_after_first"} if len(request_kinds) > 1 else set()
    for kind in request_kinds:
        out |= REQUEST_EXPOSURE[kind]
    return sorted(out)


def match_deficit(family: str, tools: Iterable[str]) -> str | None:
    """The planted deficit (or decoy, checked first) a capability maps to by family and involved tools, else None."""
    return sim.match_deficit(PLANTED_DEFICITS, DECOYS, family, tools)


def score_recovery(kept: Iterable[tuple[str, Iterable[str]]]) -> dict[str, Any]:
    """Precision / recall of kept capabilities, given as (family, target tools), against `PLANTED_DEFICITS`."""
    return sim.score_recovery(PLANTED_DEFICITS, DECOYS, kept)
