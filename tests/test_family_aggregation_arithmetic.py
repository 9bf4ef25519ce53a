"""aggregation_arithmetic: read every reservation listed, state the total in a sentence; dumps answer nothing."""

from __future__ import annotations

import json

import pytest

from _family import publish_example
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call

NAME = "airline_total_paid_over_reservations"
READ = "get_reservation_details"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


def test_answer_is_everything_paid_over_the_listed_records(generated):
    spec, _, cls = generated
    assert len(next(c for c in spec.check.clauses if c.id == "read_all").calls) == spec.knobs.requests == 3
    env = cls()
    for seed in range(20):
        env.reset(seed=seed)
        b = env.scenario.bindings
        records = env.scenario.state["records"]
        paid = sum(p["amount"] for t in b["targets"] for p in records[t]["payment_history"])
        assert b["answer"] == paid and all(t in env.opening for t in b["targets"])
        assert len({records[t]["user_id"] for t in b["targets"]}) == 1  # one owner per request


def test_planted_episodes_score_exactly(generated):
    _, _, cls = generated
    env = cls()
    env.reset(seed=2)
    b = env.scenario.bindings
    reads = [call(READ, reservation_id=t) for t in b["targets"]]
    report = f"The total amount paid is ${b['answer']:,}. Have a nice day."  # "$12,345" counts as 12345
    assert run_actions(env, [*reads, report], seed=2)[0] == 1.0
    # any write zeroes the score
    score, info = run_actions(env, env.mutant_actions()["forbidden_extra_call"], seed=2)
    assert score == 0.0 and info["reward_breakdown"]["no_write"] == 0.0
    # weights: correct_answer 3, read_all 1 (gated on it): two of three records read and the right figure: 11/12
    assert run_actions(env, [*reads[:2], report], seed=2)[0] == pytest.approx((3 + 2 / 3) / 4)
    # off by one: nothing
    assert run_actions(env, [*reads, f"The total amount paid is {b['answer'] + 1}."], seed=2)[0] == 0.0
    # every integer up to 30000 after reading everything: nothing (the env paid 1.00)
    dump = "The total is one of these: " + " ".join(str(i) for i in range(30_001)) + "."
    assert run_actions(env, [*reads, dump], seed=2)[0] == 0.0
    # pasting the records: nothing
    pasted = "\n".join(json.dumps(env.scenario.state["records"][t]) for t in b["targets"])
    assert run_actions(env, [*reads, f"Here they are: {pasted}"], seed=2)[0] == 0.0
