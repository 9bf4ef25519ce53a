"""Planted-deficit data: a small simulated retail customer-service domain with scripted agents.

Each run's agent carries known deficits, sampled at known rates; a deficit that shows in the run makes it fail
(reward 0), as a real evaluator would. Noise failures (a fully correct run marked failed) and a DECOY behaviour (an
optional read the agents skip equally often in passed and failed runs) are mixed in. This is the miner's ground truth:
a miner should recover every deficit in `PLANTED_DEFICITS` and never report a decoy or the noise.

Runs are built directly as `Run` models (`source="planted"`) with realistic OpenAI chat messages, and can be written to
OpenAI-messages JSONL (`write_jsonl`) that `trace_envs.trajectories.loaders.load_runs` reads back.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from trace_envs.spec.rules import Condition, PolicyRules, WriteRule
from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall

POLICY = """# Retail agent policy

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


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


_STR = {"type": "string"}
TOOLS: list[dict[str, Any]] = [
    _fn("get_user_details", "Get the details of a user, including their orders.", {"user_id": _STR}, ["user_id"]),
    _fn("get_order_details", "Get the status, items, total and payment method of an order.", {"order_id": _STR},
        ["order_id"]),
    _fn("get_order_tracking", "Get the shipment tracking events of an order.", {"order_id": _STR}, ["order_id"]),
    _fn("cancel_order", "Cancel a pending order. This changes the database.",
        {"order_id": _STR, "reason": {"type": "string", "enum": ["no longer needed", "ordered by mistake"]}},
        ["order_id", "reason"]),
    _fn("refund_order", "Refund a delivered order to a payment method. This changes the database.",
        {"order_id": _STR, "payment_method_id": _STR, "amount": {"type": "number"}},
        ["order_id", "payment_method_id", "amount"]),
    _fn("update_address", "Update the default address of a user. This changes the database.",
        {"user_id": _STR, "address": _STR}, ["user_id", "address"]),
    _fn("transfer_to_human_agents", "Transfer the user to a human agent, with a summary of the issue.",
        {"summary": _STR}, ["summary"]),
]
TOOL_KINDS = {
    "get_user_details": "read",
    "get_order_details": "read",
    "get_order_tracking": "read",
    "cancel_order": "write",
    "refund_order": "write",
    "update_address": "write",
    "transfer_to_human_agents": "other",
}


@dataclass(frozen=True)
class PlantedDeficit:
    """A planted behaviour: the capability family it belongs to, the tools involved and its per-run rate."""

    name: str
    family: str
    tools: tuple[str, ...]
    rate: float
    description: str
    decoy: bool = False


PLANTED_DEFICITS: dict[str, PlantedDeficit] = {
    d.name: d
    for d in [
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
}
DECOYS: dict[str, PlantedDeficit] = {
    "skip_optional_tracking": PlantedDeficit(
        "skip_optional_tracking", "precondition_before_write", ("get_order_tracking",) + WRITE_TOOLS, 0.5,
        "skips the optional tracking lookup (does not cause failure)", decoy=True),
}
NOISE_RATE = 0.06

# task kind -> share of runs
TASK_MIX = {"cancel": 0.18, "refund": 0.18, "address": 0.08, "multi": 0.26, "forbidden": 0.14, "handoff": 0.16}

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


# Task kinds whose runs a separate block of this module simulates: kind -> (run index, rng, scenario, deficit flags,
# noise rate) -> (run, truth); and how the planted agent plays them in an env: kind -> (whether an opening asks for
# it, (step, policy state, deficit flags, messages) -> the next action).
FAMILY_TASKS: dict[str, Callable[..., tuple[Run, dict[str, Any]]]] = {}
FAMILY_STEPS: dict[str, tuple[Callable[[str], bool], Callable[..., str]]] = {}


@dataclass
class _Scenario:
    user_id: str
    name: str
    address: str
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)


class _Builder:
    """Accumulates messages, tool calls and ground truth of one run."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": POLICY}]
        self.calls: list[ToolCall] = []

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def call(self, name: str, args: dict[str, Any], result: Any) -> None:
        cid = f"call_{len(self.calls)}_{self.rng.getrandbits(32):08x}"
        idx = len(self.messages)
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
            }
        )
        text = result if isinstance(result, str) else json.dumps(result)
        self.messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": text})
        self.calls.append(ToolCall.model_construct(
            id=cid, name=name, arguments=args, result=text, error=False, requestor="agent", message_index=idx))


def _scenario(rng: random.Random) -> _Scenario:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    user_id = f"{first.lower()}_{last.lower().replace('ü', 'u')}_{rng.randint(1000, 9999)}"
    city, state, zip3 = rng.choice(_CITIES)
    sc = _Scenario(user_id, f"{first} {last}",
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


def _orders(sc: _Scenario, status: str) -> list[str]:
    return [o for o, d in sc.orders.items() if d["status"] == status]


def _requests(kind: str, sc: _Scenario, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    if kind in EXTRA_TASKS:
        return [(kind, EXTRA_TASKS[kind].request(sc, rng))]
    pending, delivered = _orders(sc, "pending"), _orders(sc, "delivered")
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
    # multi: two or three different requests
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


def _ground_truth(reqs: list[tuple[str, dict[str, Any]]], sc: _Scenario) -> list[GroundTruthAction]:
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


def _simulate(run_idx: int, rng: random.Random, rates: dict[str, float], decoy_rate: float, noise_rate: float,
              task_mix: dict[str, float]) -> tuple[Run, dict[str, Any]]:
    kinds, weights = zip(*task_mix.items())
    kind = rng.choices(kinds, weights)[0]
    sc = _scenario(rng)
    reqs = _requests(kind, sc, rng)
    flags = {d: rng.random() < r for d, r in rates.items()}
    skip_tracking = rng.random() < decoy_rate
    if kind in FAMILY_TASKS:  # a task kind simulated by its own block at the end of this module
        return FAMILY_TASKS[kind](run_idx, rng, sc, flags, noise_rate)
    b = _Builder(rng)
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
    user_rec = {"user_id": sc.user_id, "name": sc.name, "address": sc.address, "orders": list(sc.orders)}
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
        b.say("You're welcome, have a great day!")
    noise = not shown and rng.random() < noise_rate
    success = not shown and not noise
    truth = {"task_kind": kind, "deficits": sorted(shown), "noise": noise, "skipped_tracking": skip_tracking,
             "exposed": exposed_deficits([rk for rk, _ in reqs])}
    run = Run.model_construct(
        run_id=f"planted/{run_idx}",
        source="planted",
        file=None,
        task_id=f"{kind}-{run_idx}",
        trial=0,
        messages=b.messages,
        tool_calls=b.calls,
        reward=1.0 if success else 0.0,
        success=success,
        policy=POLICY,
        ground_truth=gt,
        tools=TOOLS,
        instruction=opening,
        meta={"domain": "retail", "planted": truth},
    )
    return run, truth


def iter_planted(n_runs: int, seed: int = 0, *, rates: dict[str, float] | None = None, decoy_rate: float | None = None,
                 noise_rate: float = NOISE_RATE, task_mix: dict[str, float] | None = None,
                 start: int = 0) -> Iterator[Run]:
    """Yield planted runs one at a time (constant memory); run `i` depends only on (seed, i)."""
    r = {name: d.rate for name, d in PLANTED_DEFICITS.items()}
    r.update(rates or {})
    dr = DECOYS["skip_optional_tracking"].rate if decoy_rate is None else decoy_rate
    mix = task_mix or TASK_MIX
    for i in range(start, start + n_runs):
        rng = random.Random(seed * 1_000_003 + i)
        yield _simulate(i, rng, r, dr, noise_rate, mix)[0]


def generate_planted(n_runs: int, seed: int = 0, **kwargs: Any) -> list[Run]:
    """`n_runs` planted runs (see `iter_planted` for the options). Deterministic for a given seed."""
    return list(iter_planted(n_runs, seed, **kwargs))


def run_to_record(run: Run) -> dict[str, Any]:
    """One run as an OpenAI-messages JSONL record that `load_runs` reads back."""
    return {
        "task_id": run.task_id,
        "trial": run.trial,
        "messages": run.messages,
        "reward": run.reward,
        "success": run.success,
        "tools": run.tools,
        "ground_truth": [g.model_dump() for g in run.ground_truth or []],
        "domain": "retail",
        "meta": {"planted": run.meta.get("planted", {})},
    }


def write_jsonl(runs: Iterable[Run], path: str | Path) -> Path:
    """Write runs as OpenAI-messages JSONL, atomically (temp file then `os.replace`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for run in runs:
                fh.write(json.dumps(run_to_record(run), ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# The deficits that can make a request of each kind fail, i.e. the capabilities it exercises. A task's routing truth is
# the union over its requests (plus `stops_after_first` when it has several): routing it to an adapter for any of them
# is right, anything else is wrong.
REQUEST_EXPOSURE: dict[str, frozenset[str]] = {
    "cancel": frozenset({"skip_precondition_read", "no_confirmation"}),
    "forbidden": frozenset({"forbidden_write", "skip_precondition_read", "no_confirmation"}),
    "refund": frozenset({"hallucinated_id", "no_confirmation"}),
    "address": frozenset({"no_confirmation"}),
    "handoff": frozenset({"no_handoff"}),
}


def exposed_deficits(request_kinds: list[str]) -> list[str]:
    """The planted deficits a task with these requests can fail from (its routing truth)."""
    out: set[str] = {"stops_after_first"} if len(request_kinds) > 1 else set()
    for kind in request_kinds:
        out |= REQUEST_EXPOSURE[kind]
    return sorted(out)


def match_deficit(family: str, tools: Iterable[str]) -> str | None:
    """The planted deficit (or decoy, checked first) a capability maps to by family and involved tools, else None.

    A capability matches when its family is the deficit's and every tool it names is one of the deficit's tools.
    """
    named = set(tools)
    for table in (DECOYS, PLANTED_DEFICITS):
        for name, d in table.items():
            if d.family == family and named and named <= set(d.tools):
                return name
    return None


def score_recovery(kept: Iterable[tuple[str, Iterable[str]]]) -> dict[str, Any]:
    """Precision / recall of kept capabilities, given as (family, target tools), against `PLANTED_DEFICITS`.

    precision = kept capabilities that map to a planted deficit / kept; recall = deficits with at least one kept
    capability / deficits; `decoys` and `unmatched` list what was reported wrongly.
    """
    kept = [(f, tuple(t)) for f, t in kept]
    found: set[str] = set()
    decoys: list[str] = []
    unmatched: list[str] = []
    good = 0
    for fam, tools in kept:
        m = match_deficit(fam, tools)
        if m in PLANTED_DEFICITS:
            good += 1
            found.add(m)
        elif m in DECOYS:
            decoys.append(f"{fam}:{','.join(tools)}")
        else:
            unmatched.append(f"{fam}:{','.join(tools)}")
    return {
        "precision": good / len(kept) if kept else 0.0,
        "recall": len(found) / len(PLANTED_DEFICITS),
        "found": sorted(found),
        "missed": sorted(set(PLANTED_DEFICITS) - found),
        "decoys": decoys,
        "unmatched": unmatched,
    }


# ---- the planted agents as policies for generated envs ----------------------------------------------------------------
_ORDER = re.compile(r"#[A-Z]\d{7}")
_REQUEST = re.compile(r"\b(cancel|refund) order (#[A-Z]\d{7})")
_OUT_OF_SCOPE_WORDS = ("dispute", "damage", "billing")
CLOSING = "You're welcome, have a great day!"


@dataclass
class _Step:
    kind: str
    order: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    stage: str = "start"


def _env_messages(env: Any) -> list[dict[str, Any]]:
    return env.unwrapped.messages if hasattr(env, "unwrapped") else env.messages


def _order_record(messages: list[dict[str, Any]], oid: str) -> dict[str, Any] | None:
    found = None
    for m in messages:
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and m["content"].startswith("{"):
            try:
                data = json.loads(m["content"])
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("order_id") == oid:
                found = data
    return found


def _plan_requests(opening: str) -> tuple[str | None, list[_Step]]:
    user = re.search(r"user id is ([a-z]+_[a-z]+_\d+)", opening)
    details: dict[str, Any] = {}
    start = opening.find("{")
    if start >= 0:
        try:
            details, _ = json.JSONDecoder().raw_decode(opening[start:])
        except ValueError:
            details = {}
    steps = [_Step(kind=verb, order=oid, args=dict(details)) for verb, oid in _REQUEST.findall(opening)]
    if "address" in opening and "update" in opening.lower():
        steps.append(_Step(kind="address", args=dict(details)))
    for kind, task in EXTRA_TASKS.items():
        if task.plan is not None:
            steps += [_Step(kind=kind, order=oid, args=args) for oid, args in task.plan(opening)]
    if not steps and any(w in opening.lower() for w in _OUT_OF_SCOPE_WORDS):
        steps = [_Step(kind="handoff", order=o) for o in _ORDER.findall(opening)[:1]]
    if not steps:  # a task kind of a separate block (see FAMILY_STEPS)
        steps = [_Step(kind=kind) for kind, (wants, _) in FAMILY_STEPS.items() if wants(opening)][:1]
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
        messages = _env_messages(env)
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


def _next_action(step: _Step, state: dict[str, Any], flags: dict[str, bool], messages: list[dict[str, Any]]) -> str:
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
    record = _order_record(messages, oid) if oid else None
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


# The planted POLICY's conditions for its writes, as data (what `trace-envs mine --rules` takes for real domains): the
# miner's specs carry them so the planted envs hold the policy's other conditions neutral.
PLANTED_RULES = PolicyRules(
    confirm_writes=True,
    identify_user="user_id",
    writes=[
        WriteRule(tool="cancel_order", requires=[
            Condition(path="status", op="in", value=["pending"], words="only pending orders can be cancelled")]),
        WriteRule(tool="refund_order", requires=[
            Condition(path="status", op="in", value=["delivered"], words="refunds are for delivered orders")]),
    ],
)


# ---- planted task kinds beyond the built-in ones --------------------------------------------------------------------
@dataclass(frozen=True)
class ExtraTask:
    """A task kind a family's block adds: its request's arguments, the user's words for it, the evaluator's ground
    truth, and the scripted agent's actions (`act(builder, args, flags, shown, confirm)`, adding to `shown` each
    deficit that showed). As a policy in generated envs (`planted_policy`): `plan(opening)` gives the (order id, args)
    of each such request in an env's opening, `next_action(step, flags, messages, confirm_then)` the agent's next
    action on one."""

    request: Callable[[_Scenario, random.Random], dict[str, Any]]
    text: Callable[[dict[str, Any]], str]
    truth: Callable[[dict[str, Any]], list[GroundTruthAction]]
    act: Callable[..., None]
    plan: Callable[[str], list[tuple[str, dict[str, Any]]]] | None = None
    next_action: Callable[..., str] | None = None


EXTRA_TASKS: dict[str, ExtraTask] = {}


# ---- option selection (family option_selection): exchange an item for the variant meeting the user's constraints ----
SEARCH_VARIANTS = "search_variants"
EXCHANGE_TOOL = "exchange_order_item"
_COLORS = ["black", "white", "blue", "red", "green", "grey"]
_SIZES = ["S", "M", "L", "XL"]
POLICY += """- An item of a delivered order can be exchanged for another variant of the same product: look the variants
  up with search_variants and exchange (exchange_order_item) for the one variant that meets everything the user asks
  for.
"""
TOOLS += [
    _fn(SEARCH_VARIANTS, "List the variants of a product (item id, colour, size, price, rating).", {"product_id": _STR},
        ["product_id"]),
    _fn(EXCHANGE_TOOL, "Exchange a delivered order's item for another variant of the same product. This changes the "
        "database.", {"order_id": _STR, "product_id": _STR, "new_item_id": _STR},
        ["order_id", "product_id", "new_item_id"]),
]
TOOL_KINDS.update({SEARCH_VARIANTS: "read", EXCHANGE_TOOL: "write"})
PLANTED_DEFICITS["picks_first_option"] = PlantedDeficit(
    "picks_first_option", "option_selection", (SEARCH_VARIANTS, EXCHANGE_TOOL, "get_order_details"), 0.9,
    "exchanges for the first variant listed instead of the one meeting the user's constraints")
# Exchanges are writes like the others: the deficits about every write (no confirmation, only the first request done)
# cover them too.
for _name in ("no_confirmation", "stops_after_first"):
    PLANTED_DEFICITS[_name] = dataclasses.replace(PLANTED_DEFICITS[_name], tools=WRITE_TOOLS + (EXCHANGE_TOOL,))
TASK_MIX["exchange"] = 0.12
# Cov is a share of all failed runs, so the exchanges' (and the app tasks') failures dilute every other deficit's: those
# closest to the 0.10 threshold (a forbidden cancel, a missing handoff, an invented payment id, an unconfirmed write)
# are planted a little more often to stay recoverable.
_RAISED = (("forbidden_write", 0.6), ("no_handoff", 0.7), ("hallucinated_id", 0.5), ("no_confirmation", 0.3))
for _name, _rate in _RAISED:
    PLANTED_DEFICITS[_name] = dataclasses.replace(PLANTED_DEFICITS[_name], rate=_rate)
REQUEST_EXPOSURE["exchange"] = frozenset({"picks_first_option", "no_confirmation"})
PLANTED_RULES.writes.append(WriteRule(tool=EXCHANGE_TOOL, requires=[
    Condition(path="status", op="in", value=["delivered"], words="only delivered orders can be exchanged")]))


def _exchange_request(sc: _Scenario, rng: random.Random) -> dict[str, Any]:
    """A delivered order's first item, five variants of its product (distinct prices and ratings), and the user's
    constraints: the cheapest; a rating bound only one variant (not the cheapest) meets; or the cheapest above a
    bound the cheapest variant misses. The same three classes as the option-selection envs."""
    oid = _orders(sc, "delivered")[0]
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


def _exchange_act(b: _Builder, a: dict[str, Any], flags: dict[str, bool], shown: set[str], confirm: Callable) -> None:
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


def _exchange_next(step: _Step, flags: dict[str, bool], messages: list[dict[str, Any]],
                   confirm_then: Callable[[str, str], str]) -> str:
    """Read the order, search its product's variants, take the one meeting the constraints (the first listed with
    `picks_first_option`), confirm and exchange."""
    oid = step.order
    record = _order_record(messages, oid or "")
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


EXTRA_TASKS["exchange"] = ExtraTask(_exchange_request, _exchange_text, _exchange_truth, _exchange_act,
                                    _exchange_plan, _exchange_next)


# ---- user-side actions (family user_side_action) ----------------------------------------------------------------------
# The store's app runs on the user's phone: only the user can turn its notifications on or update it. The agent reads
# the app's status, tells the user the one fix the status shows, reads again to check, then says it works. The
# deficit's agent gives vague advice instead, so the user never acts and the run fails.
APP_READ, APP_NOTIFY, APP_UPDATE = "get_app_status", "enable_app_notifications", "update_app"
LATEST_APP, OLD_APPS = "5.4.0", ("5.1.0", "5.2.3", "4.9.1")
APP_SYMPTOM = "I'm not getting any delivery notifications from your app anymore."
POLICY += """- The store app runs on the user's phone, which only the user can change. If the user gets no notifications,
  look up the app's status with get_app_status: when notifications are off, ask the user to turn on notifications
  for the app (enable_app_notifications, on their side); when the app version is older than the latest version, ask
  the user to update the app (update_app, on their side). Ask only for the fix the status shows, then look the status
  up again to check it before telling the user it works.
"""
TOOLS.append(_fn(APP_READ, "Get the status of the store app on the user's phone: version, latest version and "
                 "notifications.", {"user_id": _STR}, ["user_id"]))
TOOL_KINDS[APP_READ] = "read"
PLANTED_DEFICITS["vague_user_instruction"] = PlantedDeficit(
    "vague_user_instruction", "user_side_action", (APP_READ, APP_NOTIFY, APP_UPDATE), 0.8,
    "gives vague advice instead of telling the user the one fix on their side, which the user then never does")
# The app task's share comes out of the multi-request tasks, whose deficit has the most coverage to spare: the other
# deficits keep the share of failed runs (Cov) the miner needs to find them.
TASK_MIX["app"] = 0.12
TASK_MIX["multi"] -= 0.12
REQUEST_EXPOSURE["app"] = frozenset({"vague_user_instruction"})
_APP_FIXES = {  # user tool -> (status field, value before, value after, instruction, what the user says)
    APP_NOTIFY: ("notifications", "off", "on", "turn on notifications for the store app",
                 "OK, I turned on notifications for the store app."),
    APP_UPDATE: ("app_version", None, LATEST_APP, "update the store app to the latest version",
                 "OK, I updated the store app."),
}


def _user_call(b: _Builder, name: str, result: dict[str, Any], report: str) -> None:
    """The user runs its own tool (tau2's shape: a user message with `tool_calls`, a tool reply, then words)."""
    cid = f"call_{len(b.calls)}_{b.rng.getrandbits(32):08x}"
    idx = len(b.messages)
    b.messages.append({"role": "user", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}, "requestor": "user"}]})
    text = json.dumps(result)
    b.messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": text, "requestor": "user"})
    b.calls.append(ToolCall.model_construct(
        id=cid, name=name, arguments={}, result=text, error=False, requestor="user", message_index=idx))
    b.user(report)


def _simulate_app(run_idx: int, rng: random.Random, sc: _Scenario, flags: dict[str, bool], noise_rate: float
                  ) -> tuple[Run, dict[str, Any]]:
    fix = rng.choice(sorted(_APP_FIXES))
    field_, before, after, instruction, report = _APP_FIXES[fix]
    status = {"user_id": sc.user_id, "device": rng.choice(["Pixel 7", "iPhone 14", "Galaxy S23", "iPhone 12"]),
              "app_version": LATEST_APP, "latest_version": LATEST_APP, "notifications": "on"}
    status[field_] = before if before is not None else rng.choice(OLD_APPS)
    b = _Builder(rng)
    opening = f"Hi, I'm {sc.name}, user id {sc.user_id}. {APP_SYMPTOM}"
    b.user(opening)
    b.call("get_user_details", {"user_id": sc.user_id},
           {"user_id": sc.user_id, "name": sc.name, "address": sc.address, "orders": list(sc.orders)})
    b.call(APP_READ, {"user_id": sc.user_id}, status)
    shown = flags["vague_user_instruction"]
    if shown:
        b.say("Please check the settings on your phone and try again; that usually helps.")
        b.user("I looked, but I don't know what to change.")
        b.say("I'm sorry, I can't see anything else to do. You're welcome to try again later.")
    else:
        what = "notifications are off" if fix == APP_NOTIFY else f"the app is on version {status['app_version']}"
        b.say(f"Your app status shows that {what}. Only you can change that on your phone: please {instruction}, "
              "and tell me when it's done.")
        fixed = {**status, field_: after}
        _user_call(b, fix, {field_: after}, report)
        b.call(APP_READ, {"user_id": sc.user_id}, fixed)
        b.say(f"Thanks, I checked again: your app's {field_.replace('_', ' ')} is now {after}, so delivery "
              "notifications will reach you again.")
        b.user("Thanks, that's all.")
        b.say(CLOSING)
    noise = not shown and rng.random() < noise_rate
    success = not shown and not noise
    truth = {"task_kind": "app", "deficits": ["vague_user_instruction"] if shown else [], "noise": noise,
             "skipped_tracking": False, "exposed": exposed_deficits(["app"])}
    run = Run.model_construct(
        run_id=f"planted/{run_idx}", source="planted", file=None, task_id=f"app-{run_idx}", trial=0,
        messages=b.messages, tool_calls=b.calls, reward=1.0 if success else 0.0, success=success, policy=POLICY,
        ground_truth=[GroundTruthAction(name=fix, arguments={}, requestor="user")], tools=TOOLS, instruction=opening,
        meta={"domain": "retail", "planted": truth},
    )
    return run, truth


FAMILY_TASKS["app"] = _simulate_app


def _app_status(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and '"notifications"' in m["content"]:
            try:
                out.append(json.loads(m["content"]))
            except ValueError:
                continue
    return out


def _app_step(step: _Step, state: dict[str, Any], flags: dict[str, bool], messages: list[dict[str, Any]]) -> str:
    """The planted agent on an app task: read the status, ask for the one fix it shows (or, with the deficit, give
    vague advice), read again, say it works."""
    read = json.dumps({"name": APP_READ, "arguments": {"user_id": state["user"]}})
    seen = _app_status(messages)
    if step.stage == "start":
        step.stage = "read"
        return read
    if step.stage == "read" and seen:
        if flags["vague_user_instruction"]:
            step.stage = "done"
            state["handled"] += 1
            return "Please check the settings on your phone and try again; that usually helps."
        step.stage = "asked"
        first = seen[0]
        if first.get("notifications") == "off":
            return "Notifications are off in your app. Please turn on notifications for the store app on your phone."
        return "Your app is out of date. Please update the store app to the latest version."
    if step.stage == "asked":
        step.stage = "verify"
        return read
    step.stage = "done"
    state["handled"] += 1
    field_ = "notifications" if seen and seen[0].get("notifications") == "off" else "app_version"
    value = seen[-1].get(field_) if seen else ""
    return (f"Thanks, I checked again: your app's {field_.replace('_', ' ')} is now {value}, so delivery notifications "
            "will reach you again.")


FAMILY_STEPS["app"] = (lambda opening: re.search(r"\bapp\b", opening.lower()) is not None, _app_step)
