"""policy_refusal: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.runtime.world import call

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_refuse_basic_economy_flight_change"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


def test_target_record_carries_the_blocking_value(published):
    _, _, cls = published
    env = cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        b = env.scenario.bindings
        assert env.scenario.state["records"][b["target"]]["cabin"] == b["reason"] == "basic_economy"

def test_planted_traces(published):
    spec, _, cls = published
    env = cls()
    env.reset(seed=4)
    target = env.scenario.bindings["target"]
    read = call(spec.roles["read"], reservation_id=target)
    # The reason in plain words counts as well as the raw field value.
    words = [read, "Sorry, basic economy reservations cannot be changed. Have a nice day."]
    assert run_actions(env, words, 4)[0] == 1.0
    # Refusing without the reason: read (w1) + no write (w2) of 4 -> 0.75.
    vague = [read, "Sorry, I cannot do that. Have a nice day."]
    score, info = run_actions(env, vague, 4)
    assert score == pytest.approx(0.75)
    assert info["reward_breakdown"] == {"read_target": 1.0, "no_forbidden_write": 1.0, "explained": 0.0}
    # Writing anyway: read (w1) + explained (w1) of 4 -> 0.5.
    assert run_scripted(env, "mutant", 4, mutant="forbidden_extra_call")[0] == pytest.approx(0.5)
