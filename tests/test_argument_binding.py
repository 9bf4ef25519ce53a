"""Issue 26: a write whose key id is right and whose other arguments are wrong earns less than 1.0. The tools refuse
what a real backend refuses (unknown ids, negative counts, values outside their set, malformed dates, placeholders)
and change nothing; the check binds every other argument of a write (`arguments_bound`); every wrong-argument mutant
scores below 1.0 on every seed of every committed env; "it cannot be done" is paid only after the request's own call
and the fix failed for the reason stated."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import gymnasium as gym
import pytest

import trace_envs  # noqa: F401  (registers the committed envs)
from trace_envs.checks.clauses import ArgumentsBound
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.generate.policies import chatty, run_actions, run_scripted

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(p.parent.name for p in (ROOT / "generated").glob("*/env.py"))
SEEDS = range(12)


def _env(name: str):
    return gym.make(f"trace/{name}").unwrapped


def _with(action: str, tool: str, change) -> str:
    if not action.startswith("{"):
        return action
    data = json.loads(action)
    if data["name"] != tool:
        return action
    data["arguments"] = change(copy.deepcopy(data["arguments"]))
    return json.dumps(data)


def _update(**values):
    return lambda args: {**args, **values}


def _nan_dates(args):
    args["flights"] = [dict(f, date="nan-nan-nan") for f in args["flights"]]
    return args


REPRODUCTIONS = [
    ("helpdesk_pay_open_invoices", "make_payment", _update(payment_method_id="totally_made_up")),
    ("airline_confirm_before_baggage_update", "update_reservation_baggages", _update(total_baggages=-1)),
    ("airline_confirm_before_baggage_update", "update_reservation_baggages", _update(nonfree_baggages=-1)),
    ("airline_confirm_before_baggage_update", "update_reservation_baggages",
     _update(total_baggages=7, payment_id="made_up_card")),
    ("airline_confirm_before_baggage_update", "update_reservation_baggages", _update(total_baggages=7)),
    ("helpdesk_enable_autopay_then_retry", "set_roaming", _update(roaming="off")),
    ("helpdesk_enable_autopay_then_retry", "set_roaming", _update(roaming="banana")),
    ("retail_cancel_if_pending_else_return", "return_delivered_order_items", _update(item_ids=["nan"])),
    ("airline_refuse_basic_economy_flight_change", "update_reservation_flights", _nan_dates),
]


@pytest.mark.parametrize("case", range(len(REPRODUCTIONS)))
def test_the_reported_reproductions_score_below_one_on_every_seed_with_a_write(case):
    name, tool, change = REPRODUCTIONS[case]
    env = _env(name)
    played = 0
    for seed in range(20):
        env.reset(seed=seed)
        actions = env.oracle_actions()
        if not any(a.startswith("{") and json.loads(a)["name"] == tool for a in actions):
            continue
        played += 1
        assert run_actions(env, actions, seed)[0] == 1.0
        score, _ = run_actions(env, [_with(a, tool, change) for a in actions], seed)
        assert score < 1.0, (name, seed)
    assert played >= 5


def test_a_refused_write_changes_nothing_and_answers_a_backends_error():
    env = _env("helpdesk_pay_open_invoices")
    env.reset(seed=0)
    target = env.scenario.bindings["target"]
    before = copy.deepcopy(env.scenario.state)
    reply = env.call_tool("make_payment", {"account_no": target, "amount": 10.0, "payment_method_id": "card_0000x"})
    assert json.loads(reply) == {"error": "Error: payment method card_0000x not found"}
    assert env.scenario.state["records"] == before["records"] and env.scenario.state["writes"] == []
    reply = env.call_tool("make_payment", {"account_no": target, "amount": -5, "payment_method_id": "card_1"})
    assert "must not be negative" in reply
    env = _env("helpdesk_enable_autopay_then_retry")
    env.reset(seed=0)
    reply = env.call_tool("set_roaming", {"account_no": env.scenario.bindings["target"], "roaming": "banana"})
    assert json.loads(reply)["error"] == "Error: invalid roaming banana: must be one of off, on"
    env = _env("airline_refuse_basic_economy_flight_change")
    env.reset(seed=0)
    target = env.scenario.bindings["target"]
    args = {"reservation_id": target, "cabin": "first", "flights": [], "payment_id": "credit_card_1"}
    assert "must be one of basic_economy, economy, business" in env.call_tool("update_reservation_flights", args)


@pytest.mark.parametrize("name", COMMITTED)
def test_every_wrong_argument_mutant_scores_below_one_on_every_seed(name):
    """The oracle and its announcing twin still score 1.0; each of its writes' non-key arguments made wrong does not."""
    env = _env(name)
    failures = []
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0
        env.reset(seed=seed)
        assert run_actions(env, chatty(env.oracle_actions(), seed), seed)[0] == 1.0
        env.reset(seed=seed)
        for label, actions in env.argument_mutants().items():
            score = run_actions(env, actions, seed)[0]
            if score >= 1.0:
                failures.append(f"seed {seed}: {label} scored {score}")
    assert not failures, failures


def test_envs_with_writes_have_wrong_argument_mutants_for_each_non_key_argument():
    env = _env("airline_confirm_before_baggage_update")
    seed = next(s for s in range(20) if env.reset(seed=s) and env.scenario.bindings["writes"])
    env.reset(seed=seed)
    labels = set(env.argument_mutants())
    for arg in ("total_baggages", "nonfree_baggages"):
        assert {f"update_reservation_baggages.{arg}={k}" for k in ("negative", "nan", "other")} <= labels
    assert "update_reservation_baggages.payment_id=invented_id" in labels
    assert not any(".reservation_id=" in label for label in labels)


def test_unfixable_is_paid_only_after_the_requests_own_call_and_the_fix_failed_for_the_reason():
    """Two malformed calls (an unknown argument on each) and the oracle's explanation earn nothing: nothing the agent
    saw showed the reason it states."""
    env = _env("helpdesk_enable_autopay_then_retry")
    seed = next(s for s in range(40) if env.reset(seed=s) and env.scenario.klass == "unfixable")
    env.reset(seed=seed)
    oracle = env.oracle_actions()
    assert run_actions(env, oracle, seed)[0] == 1.0
    malformed = [_with(a, "set_roaming", _update(extra="1")) for a in oracle]
    malformed = [_with(a, "enable_autopay", _update(extra="1")) for a in malformed]
    score, info = run_actions(env, malformed, seed)
    assert score < 1.0 and info["reward_breakdown"]["explained"] == 0.0
    # the request's own call skipped: the fix failing alone does not show why the request cannot be done
    skipped = [a for a in oracle if not (a.startswith("{") and json.loads(a)["name"] == "set_roaming")]
    assert run_actions(env, skipped, seed)[0] < 1.0


def test_arguments_bound_clause():
    clause = ArgumentsBound(id="arguments_bound", key="order_id", text=["reason"], free={"cancel": {"note": 20}})
    writes = [{"tool": "cancel", "args": {"order_id": "A", "reason": "no longer needed", "qty": 2}}]

    def score(args, error=False):
        trace = ActionTrace(steps=[TraceStep(kind="call", name="cancel", arguments=args, error=error)],
                            tool_kinds={"cancel": "write"})
        return clause.assess(trace, {"writes": writes})[0]

    assert score({"order_id": "A", "reason": "No longer needed.", "qty": 2}) == 1.0
    assert score({"order_id": "A", "reason": "no longer needed", "qty": 2, "note": "thanks"}) == 1.0
    assert score({"order_id": "A", "reason": "no longer needed", "qty": 3}) == 0.0
    assert score({"order_id": "A", "reason": "ordered by mistake", "qty": 2}) == 0.0
    assert score({"order_id": "A", "reason": "no longer needed"}) == 0.0
    assert score({"order_id": "A", "reason": "no longer needed", "qty": 2, "note": "x" * 21}) == 0.0
    assert score({"order_id": "A", "reason": "no longer needed", "qty": 2, "payment_id": "p"}) == 0.0
    assert score({"order_id": "B", "reason": "anything", "qty": 9}) == 1.0  # another record: other clauses' business
    assert score({"order_id": "A", "reason": "x", "qty": 9}, error=True) == 1.0  # a refused call did nothing


def test_a_value_told_about_another_record_tells_nothing():
    """'The status of order #W4919066 is pending.' when the user asked about #W4919065 earns nothing."""
    env = _env("retail_tell_order_status")
    for seed in range(6):
        env.reset(seed=seed)
        oracle = env.oracle_actions()
        target = env.scenario.bindings["target"]
        other = target[:-1] + str((int(target[-1]) + 1) % 10)
        assert run_actions(env, oracle, seed)[0] == 1.0
        told_other = [a if a.startswith("{") else a.replace(target, other) for a in oracle]
        assert run_actions(env, told_other, seed)[0] < 1.0


def test_a_confirmation_stating_other_values_than_the_write_confirms_nothing():
    """A yes to three bags is no yes to the write of two that follows."""
    env = _env("airline_confirm_before_baggage_update")
    played = 0
    for seed in range(20):
        env.reset(seed=seed)
        if env.scenario.bindings["declined"]:
            continue
        oracle = env.oracle_actions()
        write = next(json.loads(a)["arguments"] for a in oracle if a.startswith("{") and "baggages" in a)
        stated = json.dumps({k: v for k, v in write.items() if k != "reservation_id"}, sort_keys=True)
        misstated = stated.replace(f'"total_baggages": {write["total_baggages"]}',
                                   f'"total_baggages": {write["total_baggages"] + 1}')
        assert misstated != stated
        actions = [a.replace(stated, misstated) if not a.startswith("{") else a for a in oracle]
        assert run_actions(env, oracle, seed)[0] == 1.0
        assert run_actions(env, actions, seed)[0] < 1.0
        played += 1
    assert played >= 5


@pytest.mark.parametrize("probe", ["field_hedge", "prose_value"])
def test_the_new_probes_earn_nothing_where_their_values_are_checked(probe):
    from trace_envs.generate.policies import run_policy
    from trace_envs.generate.probes import probe_policy

    for name in ("helpdesk_pay_open_invoices", "airline_confirm_before_baggage_update",
                 "helpdesk_enable_autopay_then_retry", "retail_cancel_if_pending_else_return"):
        env = _env(name)
        earned = [run_policy(env, probe_policy(probe), seed)[0] for seed in range(10)]
        if probe == "prose_value" and name == "retail_cancel_if_pending_else_return":
            # Its check pays no confirmation: a misstated question costs nothing, and the probe is judged as a
            # decision (validation.md), earning on a seed exactly what always making the requested write earns.
            always = [run_policy(env, probe_policy("always_write"), seed)[0] for seed in range(10)]
            assert earned == always, name
            continue
        assert max(earned) == 0.0, name
