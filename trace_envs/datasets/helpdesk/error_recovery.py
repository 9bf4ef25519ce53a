"""Turn on roaming (family error_recovery): `set_roaming` fails while the account's autopay is off, with an error that
names the cause; `enable_autopay` removes it and the retry succeeds. When autopay cannot be enabled (the card on file
is expired) the agent tells the customer why. The deficit's agent gives up after the first error, or retries the same
call unchanged, and closes with an apology that says nothing of the cause."""

from __future__ import annotations

import json
import re
from typing import Any

from trace_envs.datasets.helpdesk.core import ACCOUNT, DOMAIN, ROAMING, Customer, account_record, authenticate, opening, read_account
from trace_envs.datasets.sim import STR, PlantedDeficit, TaskKind, TaskOutcome, fn_schema
from trace_envs.trajectories.models import GroundTruthAction

AUTOPAY = "enable_autopay"
NEEDS_AUTOPAY = "Error: autopay must be enabled before roaming can be turned on"
CARD_EXPIRED = "Error: autopay cannot be enabled; the card on file is expired"
DEFICIT = "gives_up_on_error"
DOMAIN.add_tools([
    fn_schema(AUTOPAY, "Turn autopay on for an account, charging its payment method on file. This changes the account.",
              {"account_no": STR}, ["account_no"]),
], kinds={AUTOPAY: "write"})
DOMAIN.add_policy("- Roaming can only be turned on for an account with autopay enabled. When set_roaming returns an "
                  "error saying autopay must be enabled first, enable it with enable_autopay and try again; when "
                  "autopay cannot be enabled, tell the customer why instead.")
DOMAIN.add_deficit(PlantedDeficit(DEFICIT, "error_recovery", (ROAMING, AUTOPAY, ACCOUNT), 0.6,
                                  "stops after a tool error, or retries the same call unchanged, instead of fixing "
                                  "the cause the error names and retrying"))
# The request as the family's scenario builder words it ("I'd like to set the roaming of account AC-731045.").
_ROAMING = re.compile(r"\bset the roaming of account\b", re.IGNORECASE)
_ACCOUNT_NO = re.compile(r"\bAC-\d{6}\b")
# How gpt-4o's tau-bench airline turns leave a failure they did not look into ("It seems there is an issue with
# using the gift cards to cover the cost difference."): no cause, no decline with a reason.
GIVE_UP = ("It seems there is an issue with turning on roaming for your line, and the change did not go through. Is "
           "there anything else I can help you with?")


def why_not(reason: str) -> str:
    return (f"I'm sorry, but I can't turn on roaming for your line: it needs autopay, and autopay can't be enabled "
            f"because {reason}. Once you add a valid payment method, we can turn roaming on.")


def _simulate(b, rng, customer: Customer, flags: dict[str, bool]) -> TaskOutcome:
    account = customer.account
    account["autopay"] = "off"
    fixable = rng.random() < 0.5
    for method in account["payment_methods"]:
        method["expired"] = not fixable
    no = customer.account_no
    b.user(opening(customer, "I'm travelling abroad next week, could you turn on international roaming on my line?"))
    authenticate(b, customer)
    read_account(b, customer)
    args = {"account_no": no, "roaming": "on"}
    b.call(ROAMING, args, NEEDS_AUTOPAY, error=True)
    # The evaluator expects the requested write (the fix is the way to it); none when autopay cannot be enabled.
    truth = [GroundTruthAction(name=ROAMING, arguments=args)] if fixable else []
    if flags[DEFICIT]:
        for _ in range(rng.choice([0, 1, 2])):  # some retry the same call unchanged first
            b.call(ROAMING, args, NEEDS_AUTOPAY, error=True)
        b.say(GIVE_UP)
        return TaskOutcome(truth, {DEFICIT})
    b.say("Roaming needs autopay on this account, so I'll enable autopay first.")
    if not fixable:
        b.call(AUTOPAY, {"account_no": no}, CARD_EXPIRED, error=True)
        b.say(why_not("the card on file is expired"))
        return TaskOutcome(truth, set())
    account["autopay"] = "on"
    b.call(AUTOPAY, {"account_no": no}, {"account_no": no, "autopay": "on"})
    account["line"]["roaming"] = "on"
    b.call(ROAMING, args, {"account_no": no, "line": dict(account["line"])})
    b.say(f"Done: autopay is now enabled and international roaming is on for account {no}.")
    return TaskOutcome(truth, set())


def _last_result(messages: list[dict[str, Any]]) -> tuple[str | None, dict[str, Any] | None]:
    """The name and parsed content of the last tool reply."""
    for m in reversed(messages):
        if m.get("role") == "tool":
            try:
                data = json.loads(m.get("content") or "")
            except ValueError:
                data = {"error": m.get("content")}
            return m.get("name"), data if isinstance(data, dict) else {}
    return None, None


def _step(state: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    """Read the account, try the write, and on its error enable autopay and retry (or say why autopay cannot be
    enabled); with the deficit, apologise after the first error and stop."""
    if state.get("closed"):
        return None
    m = _ACCOUNT_NO.search(state["opening"])
    no = m.group(0) if m else ""
    if account_record(messages, no or None) is None:
        return json.dumps({"name": ACCOUNT, "arguments": {"account_no": no}})
    attempt = json.dumps({"name": ROAMING, "arguments": {"account_no": no, "roaming": "on"}})
    name, result = _last_result(messages)
    if name == ACCOUNT:
        return attempt
    error = str((result or {}).get("error") or "")
    if name == ROAMING and not error:
        state["closed"] = True
        return f"Done: international roaming is now on for account {no}."
    if name == ROAMING:
        if state["flags"][DEFICIT] or state.get("fixed"):
            state["closed"] = True
            return GIVE_UP
        state["fixed"] = True
        return json.dumps({"name": AUTOPAY, "arguments": {"account_no": no}})
    if name == AUTOPAY and error:
        state["closed"] = True
        return why_not(error.split(";")[-1].strip().rstrip("."))
    return attempt


DOMAIN.add_kind(TaskKind(name="roaming_autopay", share=0.2, simulate=_simulate, exposure=frozenset({DEFICIT}),
                         wants=lambda text: _ROAMING.search(text) is not None, step=_step))
