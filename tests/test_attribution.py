"""Failure attribution on named real runs: each departure typed as a reader of the two calls would type it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trace_envs.checks.attribution import attribute, departure_table
from trace_envs.cli import app, _load_commands
from trace_envs.datasets.planted import generate_planted
from trace_envs.mining.gates import infer_gate
from trace_envs.mining.propose_offline import proposal_context
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall
from trace_envs.trajectories.profile import build_profile

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2-bench" / "results"
TELECOM = DATA / "tau2-bench" / "telecom-results"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


def _load(path):
    runs = load_runs([path]).runs
    return {r.run_id: r for r in runs}, build_profile(runs).kinds


@pytest.fixture(scope="module")
def tau():
    return _load(TAU)


@needs_data
def test_another_listed_flight_is_an_option_choice(tau):
    runs, kinds = tau
    a = attribute(runs["gpt-4o-airline/7/0"], kinds)
    [d] = a.departures
    assert (d.kind, d.tool, d.arg) == ("other_option", "update_reservation_flights", "flights")
    assert d.expected["arguments"]["flights"][0]["flight_number"] == "HAT110"
    assert d.actual["arguments"]["flights"][0]["flight_number"] == "HAT004"
    assert "search_onestop_flight" in d.evidence  # where the expected flight was listed


@needs_data
def test_a_reservation_the_ground_truth_keeps_is_an_unwarranted_cancel(tau):
    runs, kinds = tau
    a = attribute(runs["gpt-4o-airline/15/0"], kinds)
    cancels = a.of("unwarranted_write", "cancel_reservation")
    assert [d.actual["arguments"] for d in cancels] == [{"reservation_id": "GV1N64"}]
    assert a.verdicts()[cancels[0].call] is False


@needs_data
def test_wrong_baggage_count_is_a_wrong_number(tau):
    runs, kinds = tau
    a = attribute(runs["gpt-4o-airline/0/0"], kinds)
    bags = a.of("wrong_number", "book_reservation", "nonfree_baggages")
    assert [(d.expected_value, d.actual_value) for d in bags] == [(0, 1)]
    # the payment split differs too, in its amounts
    assert a.of("wrong_number", "book_reservation", "payment_methods")


@needs_data
def test_matching_writes_and_a_failure_is_in_what_was_said(tau):
    runs, kinds = tau
    assert [d.kind for d in attribute(runs["gpt-4o-airline/2/1"], kinds).departures] == ["said"]
    clean = attribute(runs["gpt-4o-airline/6/0"], kinds)
    assert clean.success and clean.departures == []


@needs_data
def test_tau_bench_airline_table(tau):
    runs, kinds = tau
    attributions = [attribute(r, kinds) for r in runs.values()]
    table = {row["kind"]: row for row in departure_table(attributions)}
    assert (table["missing_write"]["runs"], table["wrong_number"]["runs"], table["other_option"]["runs"],
            table["unwarranted_write"]["runs"]) == (53, 19, 22, 39)
    assert table["missing_write"]["share"] == pytest.approx(53 / 116, abs=1e-3)


@needs_data
def test_telecom_user_never_toggled_roaming():
    runs, kinds = _load(TELECOM)
    rid = ("gpt-4.1_telecom/[mobile_data_issue]data_saver_mode_on|user_abroad_roaming_enabled_off"
           "[PERSONA:Easy]/0")
    a = attribute(runs[rid], kinds)
    assert [d.tool for d in a.of("user_action_missing")] == ["toggle_roaming"]
    assert a.of("unwarranted_handoff", "transfer_to_human_agents")


@needs_data
def test_retail_stopped_before_a_requested_exchange():
    runs, kinds = _load(TAU2 / "gpt-4.1_retail.json")
    [d] = attribute(runs["gpt-4.1_retail/64/0"], kinds).departures
    assert (d.kind, d.tool, d.instead) == ("missing_write", "exchange_delivered_order_items", "stopped")


def test_planted_invented_payment_id_is_an_invention_on_another_domain():
    runs = generate_planted(300, seed=5)
    kinds = build_profile(runs).kinds
    invented = [r for r in runs if "hallucinated_id" in r.meta["planted"]["deficits"]]
    assert invented
    for run in invented:
        kinds_seen = {(d.kind, d.tool, d.arg) for d in attribute(run, kinds).departures}
        assert ("invented_value", "refund_order", "payment_method_id") in kinds_seen


def _run(calls, gt, success=False, user="I want to cancel order #1 and get a refund to my card."):
    msgs = [{"role": "user", "content": user}]
    tool_calls = []
    for i, (name, args, result) in enumerate(calls):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": result})
        tool_calls.append(ToolCall(id=f"c{i}", name=name, arguments=args, result=result, message_index=len(msgs) - 2))
    return Run(run_id="x/1/0", source="test", task_id="1", messages=msgs, tool_calls=tool_calls, reward=float(success),
               success=success, ground_truth=[GroundTruthAction(name=n, arguments=a) for n, a in gt])


KINDS = {"get_order": "read", "refund": "write", "cancel": "write"}


def test_a_value_the_user_stated_against_the_record_is_a_user_claim():
    order = json.dumps({"order_id": "#1", "payment_method_id": "card_9"})
    run = _run([("get_order", {"order_id": "#1"}, order), ("refund", {"order_id": "#1", "pm": "my card"}, "ok")],
               [("refund", {"order_id": "#1", "pm": "card_9"})])
    [d] = attribute(run, KINDS).departures
    assert (d.kind, d.arg) == ("user_claim", "pm")


def test_no_ground_truth_no_attribution_and_errored_calls_never_match():
    run = _run([("cancel", {"order_id": "#1"}, "Error: order not found")], [("cancel", {"order_id": "#1"})])
    run.tool_calls[0].error = True
    [d] = attribute(run, KINDS).departures
    assert (d.kind, d.instead) == ("missing_write", "call_failed")
    assert attribute(run.model_copy(update={"ground_truth": None}), KINDS) is None


def test_a_gate_is_learned_from_the_writes_the_ground_truth_does_and_does_not_make():
    # four passed cancels: too few for the passed-runs-only gate (it needs five); the failed runs' wrong cancels
    # are what shows the rule
    runs = []
    for i in range(8):
        c = "business" if i % 2 == 0 else "economy"
        record = json.dumps({"order_id": f"#{i}", "cabin": c})
        gt = [("cancel", {"order_id": f"#{i}"})] if c == "business" else []
        runs.append(_run([("get_order", {"order_id": f"#{i}"}, record), ("cancel", {"order_id": f"#{i}"}, "ok")],
                         gt, success=c == "business").model_copy(update={"run_id": f"x/{i}/0", "task_id": str(i)}))
    profile = build_profile(runs)
    ctx = proposal_context(profile, runs)
    roles = {"read": "get_order", "write": "cancel", "key": "order_id"}
    gate, _ = infer_gate(roles, ctx.index, "Only business cabin orders can be cancelled.")
    assert gate == {"field": "cabin", "allowed": ["business"], "blocked": ["economy"]}
    # a rule the policy never states is not learned
    assert infer_gate(roles, ctx.index, "Be polite.") == ({}, "")


def _asked_run(i: int, trial: int, cover: str, answer: str | None) -> Run:
    """A cancel of order #i (cover `cover`): asked first and answered `answer`, cancelled on a yes; with no answer,
    cancelled at once (and failed: this user would have said no)."""
    record = json.dumps({"order_id": f"#{i}", "cover": cover})
    msgs = [{"role": "user", "content": f"Please cancel order #{i}."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function", "function": {
                "name": "get_order", "arguments": json.dumps({"order_id": f"#{i}"})}}]},
            {"role": "tool", "tool_call_id": "c0", "name": "get_order", "content": record}]
    calls = [ToolCall(id="c0", name="get_order", arguments={"order_id": f"#{i}"}, result=record, message_index=1)]
    if answer is not None:
        msgs += [{"role": "assistant", "content": f"I'll cancel order #{i}. Shall I go ahead?"},
                 {"role": "user", "content": answer}]
    if answer is None or answer.startswith("Yes"):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "cancel", "arguments": json.dumps({"order_id": f"#{i}"})}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "cancel", "content": "ok"}]
        calls.append(ToolCall(id="c1", name="cancel", arguments={"order_id": f"#{i}"}, result="ok",
                              message_index=len(msgs) - 2))
    success = answer is not None
    return Run(run_id=f"x/{i}/{trial}", source="test", task_id=str(i), messages=msgs, tool_calls=calls,
               reward=float(success), success=success)


def test_a_write_left_out_because_the_user_said_no_teaches_no_rule():
    """Randomizer seed 15: the users who declined a confirmation happened to hold orders of some covers. Passed runs
    that asked and heard "No, that's okay." (a yes word in a no) left those orders alone, and the failed runs
    cancelled them unasked; neither is evidence that the cover forbids a cancel."""
    from trace_envs.mining.expected import ExpectedFromPassed

    runs = []
    for i in range(8):
        cover, answer = ("pet", "Yes, please.") if i % 2 == 0 else ("car", "No, that's okay.")
        runs += [_asked_run(i, 0, cover, answer), _asked_run(i, 1, cover, answer)]
        if cover == "car":
            runs.append(_asked_run(i, 2, cover, None))
    runs = list(ExpectedFromPassed(runs, {"get_order": "read", "cancel": "write"}).fill_all(runs))
    assert all(r.meta.get("declined") for r in runs if r.task_id in "1357")
    ctx = proposal_context(build_profile(runs), runs)
    roles = {"read": "get_order", "write": "cancel", "key": "order_id"}
    assert infer_gate(roles, ctx.index, "Questions about an order's cover go to the cover desk.") == ({}, "")


def test_a_policy_that_words_the_action_its_own_way_still_states_the_gate():
    """Randomizer seed 18: "You may stop the standing order on an account only when its kyc is complete" states the
    gate of `standing_orders.cancel` by the thing it acts on, the policy never saying "cancel"; where the policy does
    say the verb, the thing alone states nothing ("flight" is in most airline sentences)."""
    from trace_envs.mining.gates import policy_support

    gate = {"field": "kyc", "allowed": ["complete"], "blocked": ["expired"]}
    policy = ("- You may stop the standing order on an account only when its kyc is complete.\n"
              "- Look the account up first.")
    assert policy_support(policy, gate, "standing_orders.cancel") == 2
    assert policy_support(policy + "\n- Cancel a card only when asked.", gate, "standing_orders.cancel") == 1
    # the thing acted on in a sentence that restricts nothing is no rule (randomizer seed 35: "Lakeside" is both a
    # clinic's name and a value of the slot's site)
    site = {"field": "site", "allowed": ["Hillview"], "blocked": ["Lakeside"]}
    header = "As the Lakeside clinic's assistant you help patients with their appointments."
    assert policy_support(header, site, "reserveAppointmentSlot") == 1
    assert policy_support(header, site, "reserveAppointmentSlot", ["lakeside", "appointments"]) == 1


def test_a_gate_the_policy_sentence_reverses_is_not_stated():
    """Held-out randomizer seed 52: "Waive the freeze fee ... only when its medical note is on file" names the verb of
    `membership_freeze` too; a gate for the freeze learned from noise (on file blocked) says the opposite of the
    sentence, so the policy backs it not at all, while the gate the sentence states is backed."""
    from trace_envs.mining.gates import policy_support

    policy = ("- Waive the freeze fee on a membership only when its medical note is on file.\n"
              "- Before you freeze a membership, ask the member to confirm.")
    reversed_gate = {"field": "medical_note", "allowed": ["missing"], "blocked": ["expired", "on file"]}
    assert policy_support(policy, reversed_gate, "membership_freeze") == 0
    stated = {"field": "medical_note", "allowed": ["on file"], "blocked": ["expired", "missing"]}
    assert policy_support(policy, stated, "freeze_fee_waive") == 2
    # a negation before the value keeps it on the blocked side ("only if the flight is not basic economy")
    airline = "A flight can be changed only if it is not basic economy."
    cabin = {"field": "cabin", "allowed": ["business", "economy"], "blocked": ["basic_economy"]}
    assert policy_support(airline, cabin, "update_reservation_flights") == 2


@needs_data
def test_diagnose_prints_one_run_side_by_side():
    _load_commands()
    res = CliRunner().invoke(app, ["diagnose", str(TAU), "--run", "gpt-4o-airline/7/0"])
    assert res.exit_code == 0, res.output
    assert "other_option update_reservation_flights.flights" in res.output
    assert "expected: update_reservation_flights(" in res.output and "agent:    update_reservation_flights(" in res.output
    res = CliRunner().invoke(app, ["diagnose", str(TAU), "--run", "gpt-4o-airline/7/9"])
    assert res.exit_code == 2 and "no such run" in res.output and "gpt-4o-airline/7/0" in res.output


@needs_data
def test_tau2_airline_learns_the_cancel_rule_from_the_wrong_cancels():
    """40 runs hold too few passed cancels for the passed-runs gate; the records read before the cancels the ground
    truth does not make (blocked) and before the ones it does (allowed) point at the field the policy names, insurance.
    The policy's cancellation section also allows any business flight, so insurance alone is not made a rule (an env
    refusing an uninsured business cancellation would punish an agent following the policy): the proposal is left
    out, and its reason says what the runs showed and what would settle it."""
    runs = [r for r in load_runs([TAU2]).runs if "airline" in r.run_id]
    from trace_envs.mining.propose_offline import propose_offline

    skipped: list[str] = []
    cands = {c.name: c for c in propose_offline(build_profile(runs), runs, skipped=skipped)}
    assert "no_unwarranted_cancel_reservation" not in cands
    why = next(s for s in skipped if s.startswith("no_unwarranted_cancel_reservation: "))
    assert "the runs show insurance deciding cancel_reservation" in why and "cabin business" in why, why
