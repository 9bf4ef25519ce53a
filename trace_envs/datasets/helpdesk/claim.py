"""A claim to verify (family claim_verification): the customer says an invoice is already paid and asks to waive its
late fee. The fee may be waived only when the invoice's record says paid; half the customers are right, half are not
(the invoice is still open). The deficit's agent trusts the claim: it waives the fee without looking the invoice up,
or after reading an open invoice."""

from __future__ import annotations

import json
import re
from typing import Any

from trace_envs.datasets.helpdesk.core import DOMAIN, Customer, authenticate, opening
from trace_envs.datasets.sim import STR, PlantedDeficit, TaskKind, TaskOutcome, fn_schema, latest_record
from trace_envs.trajectories.models import GroundTruthAction

INVOICE, WAIVE = "get_invoice", "waive_late_fee"
DEFICIT = "trusts_claim"
LATE_FEE = 7.5
DOMAIN.add_tools([
    fn_schema(INVOICE, "Get one invoice: its account, period, amount, status (paid or open) and late fee.",
              {"invoice_id": STR}, ["invoice_id"]),
    fn_schema(WAIVE, "Waive the late fee of an invoice. This changes the account.", {"invoice_id": STR},
              ["invoice_id"]),
], kinds={INVOICE: "read", WAIVE: "write"})
DOMAIN.add_policy("- A late fee is waived only on an invoice that is paid. When a customer says an invoice is paid and "
                  "asks to waive its late fee, look the invoice up with get_invoice first: waive the fee with "
                  "waive_late_fee only when the invoice's status is paid; otherwise tell the customer the status the "
                  "invoice shows and change nothing.")
DOMAIN.add_deficit(PlantedDeficit(DEFICIT, "claim_verification", (INVOICE, WAIVE), 0.6,
                                  "waives the late fee on the customer's word that the invoice is paid, without or "
                                  "despite the invoice's record"))
# How customers put it (the tau-bench users' "I already ...", "has been ..."), and how a generated env's opening does.
_CLAIMS = ("I already paid invoice {inv}, so please remove its late fee.",
           "Invoice {inv} has been paid already, but I was still charged a late fee. Can you waive it?",
           "I've paid invoice {inv} in full, please waive the late fee on it.")
_WANTS = re.compile(r"\b(?:already paid|been paid|is paid|I'?ve paid)\b.*\blate fee\b", re.IGNORECASE | re.DOTALL)
_INVOICE_ID = re.compile(r"\bINV-\d{5}\b")


def _invoice(customer: Customer, invoice: dict[str, Any]) -> dict[str, Any]:
    return {"invoice_id": invoice["invoice_id"], "customer_id": customer.customer_id,
            "account_no": customer.account_no, "period": invoice["period"],
            "amount": invoice["amount"], "status": invoice["status"], "late_fee": invoice["late_fee"]}


def _simulate(b, rng, customer: Customer, flags: dict[str, bool]) -> TaskOutcome:
    invoice = rng.choice(customer.account["invoices"])
    invoice["status"] = rng.choice(["paid", "open"])  # the customer is right half the time
    invoice["late_fee"] = LATE_FEE
    inv, paid = invoice["invoice_id"], invoice["status"] == "paid"
    b.user(opening(customer, rng.choice(_CLAIMS).format(inv=inv)))
    authenticate(b, customer)
    trusting = flags[DEFICIT]
    if not trusting or rng.random() < 0.5:  # half the trusting agents read the invoice, and waive anyway
        b.call(INVOICE, {"invoice_id": inv}, _invoice(customer, invoice))
    if paid or trusting:
        b.call(WAIVE, {"invoice_id": inv}, {**_invoice(customer, invoice), "late_fee": 0.0, "waived": LATE_FEE})
        b.say(f"Done: I waived the ${LATE_FEE:.2f} late fee on invoice {inv}.")
    else:
        b.say(f"I checked invoice {inv}: our records show its status is open, not paid, so I can't waive the late "
              "fee. Once it is paid I'd be glad to look again.")
    truth = [GroundTruthAction(name=WAIVE, arguments={"invoice_id": inv})] if paid else []
    return TaskOutcome(truth, {DEFICIT} if trusting and not paid else set())


def _step(state: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    """Look the invoice up, waive the fee only when it is paid, else say its status (the deficit: waive at once)."""
    if state.get("done"):
        return None
    m = _INVOICE_ID.search(state["opening"])
    inv = m.group(0) if m else ""
    if state["flags"][DEFICIT]:
        state["done"] = True
        return json.dumps({"name": WAIVE, "arguments": {"invoice_id": inv}})
    record = latest_record(messages, "invoice_id", inv)
    if record is None:
        return json.dumps({"name": INVOICE, "arguments": {"invoice_id": inv}})
    state["done"] = True
    if record.get("status") == "paid":
        return json.dumps({"name": WAIVE, "arguments": {"invoice_id": inv}})
    status = str(record.get("status")).replace("_", " ")
    return f"I checked invoice {inv}: our records show its status is {status}, not paid, so I can't waive the late fee."


DOMAIN.add_kind(TaskKind(name="claim", share=0.2, simulate=_simulate, exposure=frozenset({DEFICIT}),
                         wants=lambda text: _WANTS.search(text) is not None, step=_step))
