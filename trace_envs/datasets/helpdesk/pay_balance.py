"""Pay the balance (family aggregation_arithmetic, pay mode): the amount owed is the sum of every open invoice, not the
newest invoice's amount. The deficit's agent pays the newest open invoice only."""

from __future__ import annotations

import json
import re
from typing import Any

from trace_envs.datasets.helpdesk.core import ACCOUNT, DOMAIN, Customer, account_record, authenticate, opening, read_account
from trace_envs.datasets.sim import NUMBER, STR, PlantedDeficit, TaskKind, TaskOutcome, fn_schema
from trace_envs.trajectories.models import GroundTruthAction

PAY = "make_payment"
DOMAIN.add_tools([fn_schema(PAY, "Take a payment on an account from one of its payment methods. This changes the "
                            "account.", {"account_no": STR, "amount": NUMBER, "payment_method_id": STR},
                            ["account_no", "amount", "payment_method_id"])], kinds={PAY: "write"})
DOMAIN.add_policy("- When the customer asks to pay their balance, the amount is the sum of every open invoice, as the "
                  "account shows them; pay it with make_payment from the payment method they name (else the "
                  "account's first).")
DOMAIN.add_deficit(PlantedDeficit("pays_newest_invoice_only", "aggregation_arithmetic", (PAY, ACCOUNT), 0.6,
                                  "pays the newest open invoice's amount instead of the whole balance"))
_BALANCE = re.compile(r"\bpay (?:my|the) (?:whole |full |outstanding )?balance\b|\bpay what I owe\b", re.IGNORECASE)


def balance(record: dict[str, Any]) -> float:
    """What the customer owes: the sum of the open invoices' amounts."""
    return round(sum(i["amount"] for i in record["invoices"] if i["status"] == "open"), 2)


def _simulate(b, rng, customer: Customer, flags: dict[str, bool]) -> TaskOutcome:
    invoices = customer.account["invoices"]
    if sum(i["status"] == "open" for i in invoices) < 2:  # one open invoice is its own balance: no sum to get wrong
        invoices[-2]["status"] = "open"
    method = customer.account["payment_methods"][0]["id"]
    b.user(opening(customer, f"I'd like to pay my balance today with {method}, please."))
    authenticate(b, customer)
    record = read_account(b, customer)
    owed = balance(record)
    shown = set()
    amount = owed
    if flags["pays_newest_invoice_only"]:
        shown.add("pays_newest_invoice_only")
        amount = invoices[-1]["amount"]
    b.call(PAY, {"account_no": customer.account_no, "amount": amount, "payment_method_id": method},
           {"account_no": customer.account_no, "paid": amount, "payment_method_id": method, "balance": round(owed - amount, 2)})
    b.say(f"Done: I paid ${amount:.2f} on account {customer.account_no} with {method}.")
    truth = [GroundTruthAction(name=PAY, arguments={"account_no": customer.account_no, "amount": owed,
                                                    "payment_method_id": method})]
    return TaskOutcome(truth, shown)


def _step(state: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    """Read the account, pay the sum of its open invoices (the newest one's amount with the deficit)."""
    record = account_record(messages)
    if record is None:
        m = re.search(r"\bAC-\d{6}\b", state["opening"])
        return json.dumps({"name": ACCOUNT, "arguments": {"account_no": m.group(0) if m else ""}})
    if state.get("paid"):
        return None
    state["paid"] = True
    opened = [i for i in record["invoices"] if i["status"] == "open"]
    amount = opened[-1]["amount"] if state["flags"]["pays_newest_invoice_only"] and opened else balance(record)
    named = re.search(r"\b(?:card|bank)_\d{4}\b", state["opening"])
    method = named.group(0) if named else record["payment_methods"][0]["id"]
    return json.dumps({"name": PAY, "arguments": {"account_no": record["account_no"], "amount": amount,
                                                  "payment_method_id": method}})


DOMAIN.add_kind(TaskKind(name="pay_balance", share=0.25, simulate=_simulate,
                         exposure=frozenset({"pays_newest_invoice_only"}),
                         wants=lambda text: _BALANCE.search(text) is not None, step=_step))
