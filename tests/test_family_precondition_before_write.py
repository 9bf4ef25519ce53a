"""precondition_before_write: scenarios where the cabin alone decides, and the exact scores of planted episodes."""

from __future__ import annotations

import json

import pytest

from _family import committed_env, seed_where, write_args
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call
from trace_envs.spec.rules import resolve_time

NAME = "airline_check_cabin_before_cancel"
READ, CANCEL = "get_reservation_details", "cancel_reservation"


@pytest.fixture(scope="module")
def env_cls():
    return committed_env(NAME)


def test_the_cabin_alone_decides(env_cls):
    """Every other condition of the shown policy is held neutral: booked more than 24 hours before the stated current
    time, no flight flown, and the user's reason (a change of plan) covered by no insurance; both outcomes occur."""
    env = env_cls()
    now = env.SPEC.rules.now
    classes = set()
    for seed in range(30):
        env.reset(seed=seed)
        b = env.scenario.bindings
        record = env.scenario.state["records"][b["target"]]
        classes.add(env.scenario.klass)
        assert record["created_at"] < resolve_time("now-24h", now)
        assert all(f["date"] >= now[:10] for f in record["flights"])
        assert (record["cabin"] == "business") is b["allowed"]
        assert record["user_id"] == env.scenario.facts["user id"]  # the user's own reservation
    assert classes == {"allowed", "blocked"}
    assert "The current time is 2024-05-15 15:00:00 EST." in env.system_prompt


def test_blocked_episodes_score_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == "blocked")
    b = env.scenario.bindings
    read = call(READ, reservation_id=b["target"])
    words = b["reason_words"]
    refusal = f"I'm sorry, but reservation {b['target']} is in {words}, so I can't cancel it under our policy."
    assert run_actions(env, [read, refusal], seed)[0] == 1.0
    # a progress message does not end the conversation, and the careful agent still earns 1.0
    assert run_actions(env, ["Let me look into that for you.", read, refusal], seed)[0] == 1.0
    # reading then pasting the record back explains nothing
    record = json.dumps(env.scenario.state["records"][b["target"]])
    score, info = run_actions(env, [read, f"Here is your reservation: {record}"], seed)
    assert score == 0.0 and info["reward_breakdown"]["explained"] == 0.0
    # reading the record 15 times and saying "Done." earns nothing
    assert run_actions(env, [read] * 15 + ["Done."], seed)[0] == 0.0
    # cancelling anyway zeroes the score, whatever was said
    assert run_actions(env, [read, call(CANCEL, reservation_id=b["target"]), refusal], seed)[0] == 0.0
    # the reason stated before the record was read does not count
    assert run_actions(env, [refusal, read], seed)[0] == 0.0


def test_allowed_episodes_score_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == "allowed")
    b = env.scenario.bindings
    read, cancel = call(READ, reservation_id=b["target"]), call(CANCEL, **write_args(env, CANCEL))
    ask = f"I will cancel reservation {b['target']}. Do you confirm (yes/no)?"
    assert run_actions(env, [read, ask, cancel, "Done. Have a nice day."], seed)[0] == 1.0
    # weights: write_target 1, read_first 2 (gated on the write): cancelling without reading earns 1/3
    score, info = run_actions(env, [ask, cancel, "Done. Have a nice day."], seed)
    assert score == pytest.approx(1 / 3) and info["reward_breakdown"]["read_first"] == 0.0
    # an extra cancellation of another reservation zeroes the score
    other = next(r for r in env.scenario.state["records"] if r != b["target"])
    assert run_actions(env, [read, cancel, call(CANCEL, reservation_id=other), "Done."], seed)[0] == 0.0


def test_a_cancelled_reservation_stays_cancelled(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == "allowed")
    target = env.scenario.bindings["target"]
    env.reset(seed=seed)
    env.step(call(CANCEL, reservation_id=target))
    assert json.loads(env.step(call(READ, reservation_id=target))[0])["status"] == "cancelled"
    again = json.loads(env.step(call(CANCEL, reservation_id=target))[0])
    assert again == {"error": f"reservation {target} already has status cancelled"}


@pytest.mark.parametrize("seed, name", [(5, "skips_prerequisite_check"), (18, "skips_kyc_check"),
                                        (19, "skips_hold_check")])
def test_a_stranger_domains_gate_worded_its_own_way_is_learned(tmp_path, seed, name):
    """Randomizer seeds 5 and 18: users ask to "take enrollment E1 pass/fail" (`grading_options.change`) and to "stop
    the standing order" (`standing_orders.cancel`), and the policy words the rule the same way. The passed runs that
    read a record and refused count as left alone because the words their users asked with are those of the runs
    that made the write (`request_vocabularies`), and the policy's sentence about the standing order states the gate
    (before: neither, so no gate and nothing proposed). Seed 19: a field that merely shifted (the section) ranks
    first but the passed runs wrote on its blocked side; the next one, which they held back on, is the gate (before:
    the first one refused, nothing was learned)."""
    from _family import mine_random

    dom, caps = mine_random(seed, tmp_path)
    score = dom.score_recovery(caps)
    assert name in score["found"] and score["false_findings"] == []
