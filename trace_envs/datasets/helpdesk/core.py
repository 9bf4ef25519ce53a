"""The help desk's core: its customers and account records, the lookup and hand-off tools, the policy's opening.

A customer (`cu_48213`) has one account (`AC-731045`): a plan, a service line, invoices (open or paid, with a late fee
on some), autopay, and payment methods (a card may be expired). Task kinds (the other modules of this package) draw
on these records, add their own tools and policy paragraph, and register their deficit and `TaskKind` on `DOMAIN`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from trace_envs.datasets.sim import STR, Builder, PlantedDeficit, PlantedDomain, fn_schema, latest_record
from trace_envs.spec.rules import PolicyRules

LOOKUP, ACCOUNT, ESCALATE = "lookup_customer", "get_account", "escalate_to_specialist"
ALERTS = "get_service_alerts"
ROAMING = "set_roaming"  # a write two kinds ask for (a conditional's branch, the write whose error is recovered from)
DECOY = "skips_service_alerts"
INTRO = """# Northwind help desk policy

As a Northwind help desk agent you help customers of our home internet and mobile service with their account, their
invoices, their line and their settings.

- Authenticate the customer first: look them up with lookup_customer by their customer id.
- Look the account up with get_account before acting on it, and act only on what the account record shows.
- You may act on a request the customer makes explicitly without asking again; say what you did afterwards.
- You may check get_service_alerts for the account's area; it is optional and changes nothing you do.
- Escalate to a specialist with escalate_to_specialist only when a request is outside what your tools can do.
"""
_FIRST = ["Amara", "Jonas", "Priya", "Mateo", "Hana", "Tobias", "Leila", "Kwame", "Sina", "Elena", "Dario", "Yuki"]
_LAST = ["Okafor", "Lindqvist", "Sharma", "Ferreira", "Takahashi", "Novak", "Haddad", "Mensah", "Costa", "Berg"]
_PLANS = ["Fiber 300", "Fiber 500", "Fiber 1000", "Mobile Unlimited", "Mobile 20GB"]


@dataclass
class Customer:
    customer_id: str
    name: str
    account: dict[str, Any]

    @property
    def account_no(self) -> str:
        return self.account["account_no"]

    @property
    def first_name(self) -> str:
        return self.name.split()[0]


def _invoices(rng: random.Random) -> list[dict[str, Any]]:
    """Three to five monthly invoices, the oldest paid, one to three of the newest open (one may carry a late fee)."""
    n = rng.randint(3, 5)
    n_open = rng.randint(1, min(3, n - 1))
    start = rng.randint(1, 12 - n + 1)
    out = []
    for i in range(n):
        status = "open" if i >= n - n_open else "paid"
        out.append({"invoice_id": f"INV-{rng.randint(10000, 99999)}", "period": f"2024-{start + i:02d}",
                    "amount": round(rng.uniform(25, 140), 2), "status": status, "late_fee": 0.0})
    return out


def draw_customer(rng: random.Random) -> Customer:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    cid = f"cu_{rng.randint(10000, 99999)}"
    cards = [{"id": f"card_{rng.randint(1000, 9999)}", "kind": "card", "expired": False}]
    if rng.random() < 0.5:
        cards.append({"id": f"bank_{rng.randint(1000, 9999)}", "kind": "bank_transfer", "expired": False})
    account = {
        "account_no": f"AC-{rng.randint(100000, 999999)}",
        "customer_id": cid,
        "plan": rng.choice(_PLANS),
        "status": "active",
        "line": {"number": f"+1-555-{rng.randint(1000, 9999)}", "status": "active", "roaming": "off"},
        "invoices": _invoices(rng),
        "autopay": rng.choice(["on", "off"]),
        "payment_methods": cards,
    }
    return Customer(cid, f"{first} {last}", account)


def authenticate(b: Builder, customer: Customer) -> None:
    """The agent looks the customer up (every run opens this way, as the policy asks), then checks the area's service
    alerts unless it carries the decoy (an optional read skipped as often in passed runs as in failed ones)."""
    b.call(LOOKUP, {"customer_id": customer.customer_id},
           {"customer_id": customer.customer_id, "name": customer.name, "accounts": [customer.account_no]})
    if not b.flags.get(DECOY):
        b.call(ALERTS, {"account_no": customer.account_no}, {"account_no": customer.account_no, "alerts": []})
    b.say(f"Thanks {customer.first_name}, I found your account {customer.account_no}.")


def read_account(b: Builder, customer: Customer) -> dict[str, Any]:
    """The agent reads the account; returns the record it saw."""
    record = dict(customer.account)
    b.call(ACCOUNT, {"account_no": customer.account_no}, record)
    return record


def opening(customer: Customer, request: str) -> str:
    """The customer's first message: who they are, their account and the request."""
    return f"Hi, this is {customer.name}, customer id {customer.customer_id}, account {customer.account_no}. {request}"


def _close(b: Builder) -> None:
    b.user("Great, thanks. That's all I needed.")
    b.say("You're welcome, have a great day!")


def account_record(messages: list[dict[str, Any]], account_no: str | None = None) -> dict[str, Any] | None:
    """The latest account record a `get_account`-style tool returned in an env's messages (that account's when
    given)."""
    return latest_record(messages, "account_no", account_no)


DOMAIN = PlantedDomain(
    name="helpdesk",
    intro=INTRO,
    draw=draw_customer,
    closing=_close,
    rules=PolicyRules(confirm_writes=False, identify_user="customer_id"),
)
DOMAIN.add_tools([
    fn_schema(LOOKUP, "Look a customer up by customer id: name and account numbers.", {"customer_id": STR},
              ["customer_id"]),
    fn_schema(ACCOUNT, "Get an account: plan, line, invoices, autopay and payment methods.", {"account_no": STR},
              ["account_no"]),
    fn_schema(ALERTS, "Get the service alerts (outages, maintenance) for an account's area.", {"account_no": STR},
              ["account_no"]),
    fn_schema(ROAMING, "Turn international roaming on or off for the account's line. This changes the account.",
              {"account_no": STR, "roaming": {"type": "string", "enum": ["on", "off"]}}, ["account_no", "roaming"]),
    fn_schema(ESCALATE, "Escalate the conversation to a human specialist, with a summary.", {"summary": STR},
              ["summary"]),
], kinds={LOOKUP: "read", ACCOUNT: "read", ALERTS: "read", ROAMING: "write", ESCALATE: "other"})


def add_decoy() -> None:
    """The decoy, once every kind has added its tools: a capability over the optional alerts read and any of the
    domain's tools is the decoy, never a finding."""
    DOMAIN.add_deficit(PlantedDeficit(DECOY, "precondition_before_write", tuple(t["function"]["name"] for t in DOMAIN.tools),
                                      0.5, "skips the optional service-alerts read (does not cause failure)", decoy=True))
