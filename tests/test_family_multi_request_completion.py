"""multi_request_completion: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.generate.publish import generate_one
from trace_envs.runtime.world import call
from trace_envs.families import env_check

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_cancel_every_requested_reservation"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


def test_every_request_is_in_the_opening(published):
    _, _, cls = published
    env = cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        b = env.scenario.bindings
        assert b["targets"] == [b["target_0"], b["target_1"], b["target_2"]] and b["target"] == b["target_0"]
        assert all(t in env.opening for t in b["targets"])

def test_planted_stop_after_first_request(published):
    """Read and cancel the first reservation only: all_requests 1/3 (w3), the rest gated -> (3 * 1/3) / 7."""
    spec, _, cls = published
    env = cls()
    env.reset(seed=5)
    first = env.scenario.bindings["target_0"]
    actions = [
        call(spec.roles["read"], reservation_id=first),
        call(spec.roles["write"], reservation_id=first),
        "Your reservation is cancelled. Have a nice day.",
    ]
    score, info = run_actions(env, actions, 5)
    assert score == pytest.approx(1 / 7)
    assert info["reward_breakdown"]["all_requests"] == pytest.approx(1 / 3)
    assert run_scripted(env, "mutant", 5, mutant="drop_required_call")[0] == pytest.approx(2 / 7)
    assert run_scripted(env, "mutant", 5, mutant="swap_calls")[0] == pytest.approx(6 / 7)


def test_check_size_must_match_requests(published, tmp_path):
    spec, _, _ = published
    wrong = spec.model_copy(update={"check": env_check(spec.family, spec.roles, spec.params, requests=2)}).with_hash()
    result = generate_one(wrong, tmp_path)
    assert not result.published and "knobs.requests" in result.error


@pytest.mark.parametrize("n", [1, 6])
def test_other_request_counts(published, tmp_path, n):
    spec, _, _ = published
    knobs = spec.knobs.model_copy(update={"requests": n})
    other = spec.model_copy(
        update={"knobs": knobs, "check": env_check(spec.family, spec.roles, spec.params, requests=n)}
    ).with_hash()
    result = generate_one(other, tmp_path, seeds=10)
    assert result.published, result.error
