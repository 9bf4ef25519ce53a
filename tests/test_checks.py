"""Checks score planted traces exactly, gate and switch clauses, and label real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.checks import (
    ActionTrace,
    AllCompleted,
    CallMade,
    CallRef,
    Check,
    Communicated,
    Confirmation,
    FinalState,
    Grounded,
    NoCall,
    Order,
    TraceStep,
)

KINDS = {"get_order": "read", "cancel_order": "write", "refund": "write"}


def call(name, **args):
    return TraceStep(kind="call", name=name, arguments=args, result={"ok": True, **args})


def say(text):
    return TraceStep(kind="say", text=text)


def user(text):
    return TraceStep(kind="user", text=text)


def trace(*steps, state=None):
    return ActionTrace(steps=list(steps), final_state=state, tool_kinds=KINDS)


def test_call_made_matchers():
    t = trace(call("refund", order_id="A1", amount=12.499, note="late #7"))
    assert CallMade(id="a", call=CallRef(tool="refund", args={"order_id": "A1"})).score(t, {}) == 1.0
    exact = CallRef(tool="refund", args={"order_id": "A1"}, match="exact")
    assert CallMade(id="a", call=exact).score(t, {}) == 0.0
    approx = CallRef(tool="refund", args={"amount": {"$approx": 12.5, "$tol": 0.01}})
    assert CallMade(id="a", call=approx).score(t, {}) == 1.0
    regex = CallRef(tool="refund", args={"note": {"$regex": r"late #\d+"}})
    assert CallMade(id="a", call=regex).score(t, {}) == 1.0
    var = CallRef(tool="refund", args={"order_id": {"$var": "target"}})
    assert CallMade(id="a", call=var).score(t, {"target": "A1"}) == 1.0
    assert CallMade(id="a", call=var).score(t, {"target": "B2"}) == 0.0
    negated = CallRef(tool="refund", args={"order_id": {"$not": {"$var": "target"}}})
    assert CallMade(id="a", call=negated).score(t, {"target": "A1"}) == 0.0
    by_kind = CallRef(kind="write")
    assert CallMade(id="a", call=by_kind, min_count=2).score(t, {}) == 0.5


def test_numbers_compare_by_value_but_bools_stay_bools():
    t = trace(call("refund", order_id="A1", amount=3, flag=True))
    assert CallMade(id="a", call=CallRef(tool="refund", args={"amount": 3.0})).score(t, {}) == 1.0
    assert CallMade(id="a", call=CallRef(tool="refund", args={"flag": 1})).score(t, {}) == 0.0


def test_order_with_join_and_unexercised_order_scores_zero():
    clause = Order(id="o", first=CallRef(tool="get_order"), then=CallRef(tool="cancel_order"), join=["order_id"])
    assert clause.score(trace(call("get_order", order_id="A"), call("cancel_order", order_id="A")), {}) == 1.0
    assert clause.score(trace(call("get_order", order_id="B"), call("cancel_order", order_id="A")), {}) == 0.0
    assert clause.score(trace(call("cancel_order", order_id="A"), call("get_order", order_id="A")), {}) == 0.0
    assert clause.score(trace(call("get_order", order_id="A")), {}) == 0.0


def test_confirmation_needs_ask_then_yes_before_each_write():
    clause = Confirmation(id="c", call=CallRef(kind="write"))
    ok = trace(say("I will cancel order A. Do you confirm?"), user("Yes please."), call("cancel_order", order_id="A"))
    assert clause.score(ok, {}) == 1.0
    no_yes = trace(say("Shall I cancel it?"), user("Hmm, let me think."), call("cancel_order", order_id="A"))
    assert clause.score(no_yes, {}) == 0.0
    two_writes_one_confirmed = trace(
        say("Shall I cancel order A?"), user("yes"), call("cancel_order", order_id="A"), call("refund", order_id="A")
    )
    assert clause.score(two_writes_one_confirmed, {}) == 0.5
    assert clause.score(trace(say("Shall I cancel order A?"), user("yes")), {}) == 0.0
    # A question that names no action confirms nothing (it used to).
    assert clause.score(trace(say("Do you confirm?"), user("yes"), call("cancel_order", order_id="A")), {}) == 0.0


def test_all_completed_partial_credit_with_distinct_calls():
    clause = AllCompleted(
        id="all", calls=[CallRef(tool="cancel_order", args={"order_id": x}) for x in ("A", "B", "C", "D")]
    )
    assert clause.score(trace(call("cancel_order", order_id="A"), call("cancel_order", order_id="C")), {}) == 0.5
    same = AllCompleted(id="s", calls=[CallRef(tool="cancel_order"), CallRef(tool="cancel_order")])
    assert same.score(trace(call("cancel_order", order_id="A")), {}) == 0.5


def test_communicated_numbers_and_after():
    # "Your order total is": three words besides "total" (a value now needs a sentence around it).
    t = trace(say("Your order total is $1,234.50."), call("get_order", order_id="A"), say("It is 99 dollars."))
    assert Communicated(id="c", values=[1234.5]).score(t, {}) == 1.0
    assert Communicated(id="c", values=[1234.5, 7]).score(t, {}) == 0.5
    assert Communicated(id="c", values=[7, 99], mode="any").score(t, {}) == 1.0
    after = Communicated(id="c", values=[1234.5], after=CallRef(tool="get_order"))
    assert after.score(t, {}) == 0.0
    assert Communicated(id="c", values=["TOTAL"]).score(t, {}) == 1.0


def test_grounded_values_must_appear_earlier():
    clause = Grounded(id="g", call=CallRef(tool="refund"), args=["order_id"])
    grounded = trace(user("my order is Z9"), call("refund", order_id="Z9"))
    invented = trace(user("my order is Z9"), call("refund", order_id="Q1"))
    assert clause.score(grounded, {}) == 1.0
    assert clause.score(invented, {}) == 0.0
    agent_only = ActionTrace(
        steps=[TraceStep(kind="call", name="get_order", arguments={"order_id": "K7"}, result={"id": "other"}),
               call("refund", order_id="K7")],
        tool_kinds=KINDS,
    )
    assert clause.score(agent_only, {}) == 0.0  # K7 appeared only in the agent's own earlier call
    echoed = ActionTrace(
        steps=[TraceStep(kind="call", name="get_order", arguments={"x": 1}, result={"id": "K7"}), call("refund", order_id="K7")],
        tool_kinds=KINDS,
    )
    assert clause.score(echoed, {}) == 1.0


def test_final_state_paths_with_vars():
    t = trace(state={"orders": {"A": {"status": "cancelled"}}, "n": 2})
    assert FinalState(id="f", path="orders.$t.status", value="cancelled").score(t, {"t": "A"}) == 1.0
    assert FinalState(id="f", path="orders.$t.status", op="ne", value="cancelled").score(t, {"t": "A"}) == 0.0
    assert FinalState(id="f", path="orders.B", op="absent").score(t, {}) == 1.0
    assert FinalState(id="f", path="n", op="in", value=[1, 2]).score(t, {}) == 1.0


def planted_check() -> Check:
    return Check(
        clauses=[
            CallMade(id="read", weight=1, call=CallRef(tool="get_order", args={"order_id": {"$var": "t"}})),
            Order(
                id="write_after_read",
                weight=2,
                requires=["read"],
                when="allowed",
                first=CallRef(tool="get_order"),
                then=CallRef(tool="cancel_order", args={"order_id": {"$var": "t"}}),
                join=["order_id"],
            ),
            NoCall(id="no_write", weight=2, requires=["read"], when="!allowed", call=CallRef(kind="write")),
            NoCall(id="no_refund", weight=1, requires=["read"], call=CallRef(tool="refund")),
        ]
    )


def test_check_weights_gating_and_switches_score_exactly():
    check = planted_check()
    good = trace(call("get_order", order_id="A"), call("cancel_order", order_id="A"))
    r = check.evaluate(good, {"t": "A", "allowed": True})
    assert r.score == 1.0 and r.passed and r.breakdown == {"read": 1.0, "write_after_read": 1.0, "no_refund": 1.0}
    extra = trace(call("get_order", order_id="A"), call("cancel_order", order_id="A"), call("refund", order_id="A"))
    assert check.evaluate(extra, {"t": "A", "allowed": True}).score == pytest.approx(3 / 4)
    nothing = trace(say("hello"))
    assert check.evaluate(nothing, {"t": "A", "allowed": True}).score == 0.0  # no free credit for doing nothing
    refused = trace(call("get_order", order_id="A"), say("cannot"))
    r = check.evaluate(refused, {"t": "A", "allowed": False})
    assert r.score == 1.0 and set(r.breakdown) == {"read", "no_write", "no_refund"}
    wrote_anyway = trace(call("get_order", order_id="A"), call("cancel_order", order_id="A"))
    assert check.evaluate(wrote_anyway, {"t": "A", "allowed": False}).score == pytest.approx(2 / 4)


def test_check_validation_errors():
    with pytest.raises(ValueError, match="not earlier clauses"):
        Check(clauses=[NoCall(id="a", requires=["b"], call=CallRef(tool="x")), NoCall(id="b", call=CallRef(tool="y"))])
    with pytest.raises(ValueError, match="unique"):
        Check(clauses=[NoCall(id="a", call=CallRef(tool="x")), NoCall(id="a", call=CallRef(tool="y"))])
    with pytest.raises(ValueError, match="tool` or `kind"):
        CallRef()


def test_check_round_trips_as_json():
    check = planted_check()
    again = Check.model_validate_json(check.model_dump_json())
    assert again == check


DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_labels_real_tau_bench_runs():
    from trace_envs.trajectories.loaders import load_runs
    from trace_envs.trajectories.profile import build_profile

    runs = load_runs([DATA / "tau-bench" / "gpt-4o-airline.json"]).runs
    kinds = build_profile(runs).kinds
    check = Check(
        clauses=[
            Order(
                id="read_before_cancel",
                first=CallRef(tool="get_reservation_details"),
                then=CallRef(tool="cancel_reservation"),
                join=["reservation_id"],
            )
        ],
        applies_if=[CallRef(tool="cancel_reservation")],
    )
    labels = []
    for run in runs:
        gt = [TraceStep(kind="call", name=a.name, arguments=a.arguments) for a in run.ground_truth or []]
        labels.append(check.label(ActionTrace.from_run(run, kinds), gt))
    assert set(labels) == {"PRESENT", "LACKING", "NA"}
    # Exactly the runs that neither cancelled nor were expected to cancel are NA.
    na = sum(
        1
        for run in runs
        if not any(c.name == "cancel_reservation" for c in run.agent_calls)
        and not any(a.name == "cancel_reservation" for a in run.ground_truth or [])
    )
    assert labels.count("NA") == na
    first = next(r for r, label in zip(runs, labels) if label == "PRESENT")
    names = [c.name for c in first.agent_calls]
    assert names.index("get_reservation_details") < names.index("cancel_reservation")
    assert json.loads(json.dumps(labels))  # plain strings
