"""aggregation_arithmetic: rendered from its example spec, validated, and scored on planted traces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_total_paid_over_reservations"
SEEDS = range(20)
READ = "get_reservation_details"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


@pytest.fixture(scope="module")
def env_cls(generated):
    return generated[2]  # publish_example already imported the published module


def test_spec_check_has_one_read_per_request(generated):
    spec, _, _ = generated
    read_all = next(c for c in spec.check.clauses if c.id == "read_all")
    assert len(read_all.calls) == spec.knobs.requests == 3



def test_answer_is_the_sum_over_the_listed_records(env_cls):
    env = env_cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        b = env.scenario.bindings
        assert [b[f"target_{i}"] for i in range(3)] == b["targets"]
        records = env.scenario.state["records"]
        assert b["answer"] == sum(records[t]["payment_history"][0]["amount"] for t in b["targets"])
        assert all(t in env.opening for t in b["targets"]) and str(b["answer"]) not in env.opening
        closing = env.oracle_actions()[-1]
        assert "?" not in closing and not re.search(DEFAULT_ASK, closing)


def test_planted_traces_score_exactly(env_cls):
    env = env_cls()
    env.reset(seed=2)
    b = env.scenario.bindings
    reads = [call(READ, reservation_id=t) for t in b["targets"]]
    report = f"The total amount paid is {b['answer']:,}. Have a nice day."  # "12,345" counts as 12345
    # weights: read_all 1, correct_answer 2, no_write 1, no_other_read 1 (total 5)
    score, info = run_actions(env, [*reads, report], seed=2)
    assert score == 1.0
    score, info = run_actions(env, env.mutant_actions()["forbidden_extra_call"], seed=2)
    assert score == pytest.approx(4 / 5)
    assert info["reward_breakdown"] == {"read_all": 1.0, "correct_answer": 1.0, "no_write": 0.0, "no_other_read": 1.0}
    # two of three records read: partial credit on read_all, everything gated on it earns nothing
    score, info = run_actions(env, [*reads[:2], report], seed=2)
    assert score == pytest.approx((2 / 3) / 5)
    assert info["reward_breakdown"]["correct_answer"] == 0.0
    # off by one: all reads but the wrong number
    score, _ = run_actions(env, [*reads, f"The total amount paid is {b['answer'] + 1}. Have a nice day."], seed=2)
    assert score == pytest.approx(3 / 5)
