"""Tool kinds from definitions and behaviour, names last; hand-offs to a person from what the definitions, replies,
conversations and policy say, never from a name containing "transfer"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.checks.attribution import attribute
from trace_envs.trajectories.handoff import is_handoff, says_person_takes_over
from trace_envs.trajectories.kinds import kind_from_definition, kind_from_name, name_words
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall
from trace_envs.trajectories.profile import build_profile, split_by_domain

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2-bench" / "results"
TELECOM = DATA / "tau2-bench" / "telecom-results" / "gpt-4.1_telecom.json"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


@pytest.mark.parametrize("name,words,kind", [
    ("cancel_order", ["cancel", "order"], "write"),
    ("leave_request_submit", ["leave", "request", "submit"], "write"),  # snake, noun first
    ("savingsOpen", ["savings", "open"], "write"),  # camelCase, noun first
    ("getHTTPStatus", ["get", "http", "status"], "read"),
    ("orders.get", ["orders", "get"], "read"),  # dotted
    ("exchange_rates.lookup", ["exchange", "rates", "lookup"], "read"),  # dotted: the last part acts ("exchange": noun)
    ("medical_note_attach", ["medical", "note", "attach"], "write"),  # a verb of change beyond the first domains'
    ("order-cancel", ["order", "cancel"], "write"),  # kebab
    ("holds_list_add", ["holds", "list", "add"], "write"),  # the verb at the tail, not the noun "list" before it
    ("books_list", ["books", "list"], "read"),  # a plural noun at the head is no verb
    ("ticketClose", ["ticket", "close"], "write"),
    ("transfer_funds", ["transfer", "funds"], "write"),  # a bank's transfer moves money
    ("transfer_to_savings", ["transfer", "to", "savings"], "write"),
    ("escalate_to_supervisor", ["escalate", "to", "supervisor"], "other"),  # sends to a person: changes no record
    # noun first, headed by a noun that is also a verb (held-out randomizer seed 83): the tail acts
    ("exchange_rates_retrieve", ["exchange", "rates", "retrieve"], "read"),
    ("freeze_fee_remove", ["freeze", "fee", "remove"], "write"),
    ("change_plan", ["change", "plan"], "write"),  # the tail is no verb: the head acts
])
def test_names_in_every_style(name, words, kind):
    assert name_words(name) == words
    assert kind_from_name(name)[0] == kind


@pytest.mark.parametrize("description,kind", [
    ("Returns the details of an order.", "read"),
    ("Return some items of a delivered order.", "write"),
    ("Opens a savings account for the customer.", "write"),
    ("This tool cancels a reservation.", "write"),
    ("Use this to look up a member by email.", "read"),
    ("Read-only view of the cart.", "read"),
    ("Compute the sum of the amounts.", "other"),
])
def test_a_description_says_what_the_tool_does(description, kind):
    assert kind_from_definition({"type": "function", "function": {"name": "x", "description": description}})[0] == kind


def _call(i, name, args, result, error=False):
    return ToolCall(id=f"c{i}", name=name, arguments=args, result=result, error=error, message_index=2 * i + 1)


def _run(calls, run_id="r/1/0", tools=None, policy="Help the customer.", closing=None, ground_truth=None,
         success=True):
    messages = [{"role": "user", "content": "hello"}]
    for c in calls:
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": c.id, "name": c.name, "content": c.result})
    if closing:
        messages.append({"role": "assistant", "content": closing})
    return Run(run_id=run_id, source="test", task_id=run_id.split("/")[1], messages=messages, tool_calls=calls,
               reward=float(success), success=success, policy=policy, tools=tools, ground_truth=ground_truth,
               meta={"domain": "bank"})


ACCOUNT = {"account_id": "A1", "balance": 100.0, "owner": "Ana", "status": "open"}


def _bank_runs(tools=None, policy="Help the customer.") -> list[Run]:
    runs = []
    for i in range(4):
        after = {**ACCOUNT, "balance": 60.0}
        runs.append(_run([
            _call(0, "accountGet", {"account_id": "A1"}, json.dumps(ACCOUNT)),
            _call(1, "transfer_funds", {"account_id": "A1", "to": "A2", "amount": 40}, json.dumps(after)),
            _call(2, "case_escalate", {"note": "fraud?"}, "A specialist will contact you within 24 hours."),
        ], run_id=f"bank/{i}/0", tools=tools, policy=policy, closing="Anything else I can do?"))
    return runs


def test_behaviour_speaks_before_the_name():
    """`transfer_funds` returns the account it was given with its balance changed: a write, and no hand-off (the
    conversation goes on, nothing says a person takes over); `case_escalate` replies that a specialist will call."""
    prof = build_profile(_bank_runs())
    assert prof.tools["transfer_funds"].kind == "write"
    assert "changed the record" in prof.tools["transfer_funds"].kind_evidence
    assert prof.tools["accountGet"].kind == "read"
    assert set(prof.handoffs) == {"case_escalate"} and prof.tools["case_escalate"].kind == "other"
    assert "replies say a person takes over" in prof.handoffs["case_escalate"]
    assert is_handoff("case_escalate", prof) and is_handoff("case_escalate", prof.kinds)
    assert not is_handoff("transfer_funds", prof)
    assert not is_handoff("case_escalate", dict(prof.kinds))  # a plain mapping of kinds knows no hand-off


def test_a_definition_decides_a_hand_off_and_a_kind():
    tools = [{"type": "function", "function": {"name": "case_escalate", "description": "Add a note to the case."}},
             {"type": "function", "function": {"name": "transfer_funds",
                                               "description": "Transfer the user to a human agent."}}]
    prof = build_profile(_bank_runs(tools=tools))
    assert set(prof.handoffs) == {"transfer_funds"}  # as its description says, whatever it replied
    assert prof.tools["case_escalate"].kind == "write" and prof.tools["case_escalate"].kind_source == "definition"


def test_a_name_and_replies_that_say_write_outweigh_a_description_that_reads_as_a_read():
    """Randomizer seed 15: `certificates.issue`, described "Get a new certificate for a policy.", answers "Policy P1
    issued.": its name and its replies both say it changes something, against one description verb ("Get")."""
    tools = [{"type": "function", "function": {"name": "certificates.issue",
                                               "description": "Get a new certificate for a policy."}},
             {"type": "function", "function": {"name": "policies.read", "description": "Get one policy."}}]
    runs = [_run([_call(0, "policies.read", {"policy_id": "P1"}, json.dumps({"id": "P1", "cover": "pet"})),
                  _call(1, "certificates.issue", {"policy_id": "P1"}, json.dumps({"ok": True,
                                                                                   "message": "Policy P1 issued."}))],
                 run_id=f"ins/{i}/0", tools=tools) for i in range(3)]
    prof = build_profile(runs)
    assert prof.tools["certificates.issue"].kind == "write"
    assert 'its name says "issue"' in prof.tools["certificates.issue"].kind_evidence
    assert prof.tools["policies.read"].kind == "read"


def test_a_call_that_ends_the_conversation_with_a_person_taking_over():
    runs = [_run([_call(0, "get_case", {"id": "C1"}, json.dumps({"id": "C1", "state": "open"})),
                  _call(1, "connect_live", {"summary": "refund"}, "ok")],
                 run_id=f"x/{i}/0", closing="I've connected you with a live agent who will take it from here.")
            for i in range(3)]
    prof = build_profile(runs)
    assert "ends 3 of 3 conversations" in prof.handoffs["connect_live"]
    # the same call, the conversation going on after it: no hand-off
    more = [r.model_copy(update={"tool_calls": [*r.tool_calls, _call(2, "get_case", {"id": "C2"}, "{}")]})
            for r in runs]
    assert "connect_live" not in build_profile(more).handoffs


def test_the_policy_names_a_hand_off_tool_never_called():
    policy = "If the customer reports fraud, call escalate_fraud so that a fraud specialist takes over the case."
    gt = [GroundTruthAction(name="escalate_fraud", arguments={"summary": "fraud"})]
    runs = [_run([_call(0, "accountGet", {"account_id": "A1"}, json.dumps(ACCOUNT))], run_id=f"b/{i}/0",
                 policy=policy, ground_truth=gt, success=False) for i in range(2)]
    prof = build_profile(runs)
    assert "the policy" in prof.handoffs["escalate_fraud"]
    [d] = attribute(runs[0], prof.kinds).departures
    assert (d.kind, d.tool) == ("missing_handoff", "escalate_fraud")


def test_a_missing_bank_transfer_is_a_missing_write_not_a_hand_off():
    gt = [GroundTruthAction(name="transfer_funds", arguments={"account_id": "A1", "to": "A2", "amount": 40})]
    runs = _bank_runs()
    failed = _run([_call(0, "accountGet", {"account_id": "A1"}, json.dumps(ACCOUNT))], run_id="bank/9/0",
                  ground_truth=gt, success=False)
    prof = build_profile([*runs, failed])
    [d] = attribute(failed, prof.kinds).departures
    assert (d.kind, d.tool) == ("missing_write", "transfer_funds")


def test_people_taking_over_in_words():
    assert says_person_takes_over("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")
    assert says_person_takes_over("A representative will contact you tomorrow.")
    assert not says_person_takes_over("Transfer successful")
    assert not says_person_takes_over("I transferred $40 to your savings account.")
    assert not says_person_takes_over("If any portion of the flight has been flown, the agent cannot help.")
    # whoever takes over the conversation itself is a person, however a reply names them (randomizer seed 19)
    assert says_person_takes_over("A case will take over this conversation shortly.")
    assert not says_person_takes_over("The new plan will take over from the old one next month.")
    # and so is whoever the conversation is handed over to (held-out randomizer seed 82, a tool's description)
    assert says_person_takes_over("Hand the conversation over to a case, who takes over from here.")
    assert not says_person_takes_over("Hand the keys over to the desk.")


@needs_data
@pytest.mark.parametrize("path", [TAU, TAU2, TELECOM])
def test_real_tools_keep_their_kinds_and_the_transfer_is_a_hand_off(path):
    """On the real files every tool keeps the kind it had when kinds came from names first, and
    `transfer_to_human_agents` is a hand-off from evidence (tau-bench: it ends every conversation that makes it and the
    policy hands users to a human agent; tau2: the policy names it)."""
    expected = {
        "book_reservation": "write", "calculate": "other", "cancel_reservation": "write", "get_flight_status": "read",
        "get_reservation_details": "read", "get_user_details": "read", "list_all_airports": "read",
        "search_direct_flight": "read", "search_onestop_flight": "read", "send_certificate": "write", "think": "other",
        "transfer_to_human_agents": "other", "update_reservation_baggages": "write",
        "update_reservation_flights": "write", "update_reservation_passengers": "write",
        "cancel_pending_order": "write", "exchange_delivered_order_items": "write", "find_user_id_by_email": "read",
        "find_user_id_by_name_zip": "read", "get_order_details": "read", "get_product_details": "read",
        "list_all_product_types": "read", "modify_pending_order_address": "write",
        "modify_pending_order_items": "write", "modify_pending_order_payment": "write", "modify_user_address": "write",
        "return_delivered_order_items": "write", "enable_roaming": "write", "get_bills_for_customer": "read",
        "get_customer_by_phone": "read", "get_data_usage": "read", "get_details_by_id": "read", "refuel_data": "write",
        "resume_line": "write", "send_payment_request": "write",
    }
    for runs in split_by_domain(load_runs([path]).runs).values():
        prof = build_profile(runs)
        assert prof.kinds == {n: expected[n] for n in prof.tools}
        assert set(prof.handoffs) == {"transfer_to_human_agents"}


def test_a_description_that_gets_something_new_is_no_read():
    """Held-out randomizer seed 87: "Get an extension on the final project for an enrollment. Billed to a financial
    aid award on file." was read as a read by its first verb; the tool acknowledged a change on every call
    ("Success: enrollment EN-08281 requested.") and its invented award id went unnoticed. Getting something new is
    obtaining; a bill names a change; getting a list of things still reads."""
    extension = "Get an extension on the final project for an enrollment. Billed to a financial aid award on file."
    assert kind_from_definition({"description": extension})[0] == "write"
    assert kind_from_definition({"description": "Get a refund for an order."}) is None  # the runs decide
    for read in ["Get the details of a reservation.", "Get a list of the user's orders.", "Gets a summary of a bill."]:
        assert kind_from_definition({"description": read})[0] == "read", read
