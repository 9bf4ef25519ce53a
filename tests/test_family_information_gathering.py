"""information_gathering: rendered from its example spec, validated, and scored on planted traces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_ask_for_reservation_id"
SEEDS = range(20)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


@pytest.fixture(scope="module")
def env_cls(generated):
    return generated[2]  # publish_example already imported the published module



def test_opening_hides_the_key_and_the_user_gives_it_when_asked(env_cls):
    env = env_cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        target = env.scenario.bindings["target"]
        assert target not in env.opening
        closing = env.oracle_actions()[-1]
        assert "?" not in closing and not re.search(DEFAULT_ASK, closing)
    env.reset(seed=3)
    target = env.scenario.bindings["target"]
    reply, ended = env.say("Could you give me your reservation number please?")
    assert target in reply and not ended


def test_planted_traces_score_exactly(env_cls):
    env = env_cls()
    env.reset(seed=4)
    b = env.scenario.bindings
    target, answer = b["target"], b["answer"]
    ask = "Could you please tell me your reservation id?"
    answer_text = f"Reservation {target}: the flight number of the first flight is {answer}. Have a nice day."
    read = call("get_reservation_details", reservation_id=target)
    # weights: read_target 1, asked_for_key 2, answered 1, no_other_read 1, no_write 1 (total 6)
    score, info = run_actions(env, [ask, read, call("cancel_reservation", reservation_id=target), answer_text], seed=4)
    assert score == pytest.approx(5 / 6)
    assert info["reward_breakdown"] == {
        "read_target": 1.0, "asked_for_key": 1.0, "answered": 1.0, "no_other_read": 1.0, "no_write": 0.0,
    }
    # reading with the right id before asking for it: a guess, not grounded
    score, info = run_actions(env, env.mutant_actions()["swap_calls"], seed=4)
    assert score == pytest.approx(4 / 6) and info["reward_breakdown"]["asked_for_key"] == 0.0
    # a guessed id that does not exist, then the right one: the failed guess is no read to ground (an errored call
    # never counts for a positive clause), but trying another record is still caught by no_other_read
    guess = call("get_reservation_details", reservation_id="ZZ9ZZZ")
    score, info = run_actions(env, [guess, ask, read, answer_text], seed=4)
    assert info["reward_breakdown"]["asked_for_key"] == 1.0
    assert info["reward_breakdown"]["no_other_read"] == 0.0
    assert score == pytest.approx((1 + 2 + 1 + 0 + 1) / 6)
    # the answer given before the lookup earns nothing for `answered`
    score, info = run_actions(env, [ask, answer_text.replace(" Have a nice day.", " Anything else?"), read], seed=4)
    assert info["reward_breakdown"]["answered"] == 0.0
