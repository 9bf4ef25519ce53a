"""Restore the line if it is suspended, else turn roaming on (family conditional_request): the customer's request turns
on the line's status, which they do not know. The deficit's agent does the first branch it was told (restore the line)
whatever the account shows: in the runs it reads the account and ignores it; playing a generated env it does not look
at all (reading and ignoring would score the class share, 0.5, there: the skipped read is what costs it on the seeds
where the first branch happens to be right)."""

from __future__ import annotations

import json
import re
from typing import Any

from trace_envs.datasets.helpdesk.core import ACCOUNT, DOMAIN, ROAMING, Customer, account_record, authenticate, opening, read_account
from trace_envs.datasets.sim import STR, PlantedDeficit, TaskKind, TaskOutcome, fn_schema
from trace_envs.trajectories.models import GroundTruthAction

RESTORE = "restore_line"
DOMAIN.add_tools([
    fn_schema(RESTORE, "Restore a suspended service line. This changes the account.", {"account_no": STR},
              ["account_no"]),
], kinds={RESTORE: "write"})
DOMAIN.add_policy("- When a request depends on the line's status (\"if my line is suspended, restore it; otherwise turn "
                  "roaming on\"), read the account first and do only what that status calls for: restore_line for a "
                  "suspended line, set_roaming for an active one.")
DOMAIN.add_deficit(PlantedDeficit("ignores_condition", "conditional_request", (ACCOUNT, RESTORE, ROAMING), 0.6,
                                  "does the first branch the customer named (restores the line) whatever its status"))
SUSPENDED_SHARE = 0.5
# The customer's conditional, as the simulated runs word it and as the family's generated envs do ("If the line
# status of my account AC-1 is suspended, I'd like to restore ...; otherwise, ...").
_CONDITION = re.compile(r"\bif\b[^.?!]*\bsuspended\b[^.?!]*\brestore\b", re.IGNORECASE)
_ACCOUNT_NO = re.compile(r"\bAC-\d{6}\b")


def _restored(account_no: str) -> dict[str, Any]:
    return {"account_no": account_no, "line_status": "active", "restored": True}


def _roaming_on(account_no: str) -> dict[str, Any]:
    return {"account_no": account_no, "roaming": "on"}


def _simulate(b, rng, customer: Customer, flags: dict[str, bool]) -> TaskOutcome:
    suspended = rng.random() < SUSPENDED_SHARE
    customer.account["line"]["status"] = "suspended" if suspended else "active"
    customer.account["autopay"] = "on"  # roaming needs autopay (see error_recovery): here the branch is the question
    no = customer.account_no
    b.user(opening(customer, "I'm travelling next week. If my line is suspended, please restore it; otherwise, "
                             "please just turn roaming on."))
    authenticate(b, customer)
    ignores = flags["ignores_condition"]
    # The deficit's agent reads the account as the policy says, then ignores what it shows: its runs never skip the
    # read, so no other capability (reading before a write) stands out where this one is lacking.
    read_account(b, customer)
    if ignores or suspended:
        b.call(RESTORE, {"account_no": no}, _restored(no))
        b.say(f"Done: I restored the line on account {no}.")
    else:
        b.call(ROAMING, {"account_no": no, "roaming": "on"}, _roaming_on(no))
        b.say(f"Your line on account {no} is active, so I turned roaming on for your trip.")
    truth = [GroundTruthAction(name=RESTORE, arguments={"account_no": no}) if suspended
             else GroundTruthAction(name=ROAMING, arguments={"account_no": no, "roaming": "on"})]
    return TaskOutcome(truth, {"ignores_condition"} if ignores and not suspended else set())


def _first_branch(text: str) -> str:
    """The write the customer named first: restoring the line or turning roaming on."""
    restore = re.search(r"\brestore\b", text, re.IGNORECASE)
    roaming = re.search(r"\broaming\b", text, re.IGNORECASE)
    return ROAMING if roaming and (not restore or roaming.start() < restore.start()) else RESTORE


def _step(state: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    """Read the account, then restore a suspended line or turn roaming on for an active one; with the deficit, the
    first branch the opening names, without reading (see the module docstring)."""
    if state.get("done"):
        return None
    m = _ACCOUNT_NO.search(state["opening"])
    no = m.group(0) if m else ""
    if state["flags"]["ignores_condition"]:
        tool = _first_branch(state["opening"])
    else:
        record = account_record(messages, no)
        if record is None:
            return json.dumps({"name": ACCOUNT, "arguments": {"account_no": no}})
        tool = RESTORE if record.get("line", {}).get("status") == "suspended" else ROAMING
    state["done"] = True
    args = {"account_no": no} if tool == RESTORE else {"account_no": no, "roaming": "on"}
    return json.dumps({"name": tool, "arguments": args})


DOMAIN.add_kind(TaskKind(name="conditional", share=0.2, simulate=_simulate, exposure=frozenset({"ignores_condition"}),
                         wants=lambda text: _CONDITION.search(text) is not None, step=_step))
