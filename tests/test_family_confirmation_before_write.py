"""confirmation_before_write: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.runtime.world import call

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_confirm_before_baggage_update"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


def test_hard_scenarios_include_a_user_who_says_no(published):
    _, _, cls = published
    env = cls()
    paths = set()
    for seed in SEEDS:
        env.reset(seed=seed)
        paths.add(env.scenario.bindings["declined"])
    assert paths == {True, False}

def test_messages_ask_and_close_properly(published):
    import re

    _, _, cls = published
    env = cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        texts = [a for a in env.oracle_actions() if not a.startswith("{")]
        ask, closing = texts[0], texts[-1]
        assert re.search(DEFAULT_ASK, ask)
        assert "?" not in closing and not re.search(DEFAULT_ASK, closing)


def _seed_with(cls, declined: bool) -> tuple[object, int]:
    env = cls()
    for seed in range(100):
        env.reset(seed=seed)
        if env.scenario.bindings["declined"] is declined:
            return env, seed
    raise AssertionError("no such seed")


def test_planted_write_before_asking_scores_three_fifths(published):
    """Read, write, then ask: write_target 1 (w2), confirmed 0 (w2), no_other_write 1 (w1) -> 3/5."""
    _, _, cls = published
    env, seed = _seed_with(cls, declined=False)
    spec = env.SPEC
    target = env.scenario.bindings["target"]
    write_args = json.loads(env.oracle_actions()[2])["arguments"]
    actions = [
        call(spec.roles["read"], reservation_id=target),
        call(spec.roles["write"], **write_args),
        "I have updated it. Do you confirm that is what you wanted?",
        "Thanks, all set. Have a nice day.",
    ]
    score, info = run_actions(env, actions, seed)
    assert score == pytest.approx(3 / 5)
    assert info["reward_breakdown"] == {"write_target": 1.0, "confirmed": 0.0, "no_other_write": 1.0}


def test_planted_write_after_user_said_no_scores_half(published):
    """The user said no and the agent wrote anyway: read 1 (w1), no write 0 (w2), details listed 1 (w1) -> 2/4."""
    _, _, cls = published
    env, seed = _seed_with(cls, declined=True)
    target = env.scenario.bindings["target"]
    score, info = run_scripted(env, "mutant", seed, mutant="forbidden_extra_call")
    assert score == pytest.approx(0.5)
    assert info["reward_breakdown"] == {"read_target": 1.0, "no_write_declined": 0.0, "listed_details": 1.0}
    assert target in env.oracle_actions()[1]
