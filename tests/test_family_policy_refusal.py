"""policy_refusal: basic economy flights cannot be changed, other cabins can; the exact scores of planted episodes."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from _family import committed_env, seed_where, write_args
from trace_envs.generate.policies import run_actions
from trace_envs.generate.probes import probe_policy
from trace_envs.generate.policies import run_policy
from trace_envs.runtime.world import call

NAME = "airline_refuse_basic_economy_flight_change"
READ, UPDATE = "get_reservation_details", "update_reservation_flights"


@pytest.fixture(scope="module")
def env_cls():
    return committed_env(NAME)


def test_refusal_is_not_the_answer_on_every_seed(env_cls):
    """The issue's env refused on every seed, so "always refuse" was optimal; now about 40% of requests are allowed."""
    env = env_cls()
    blocked = []
    for seed in range(50):
        env.reset(seed=seed)
        cabin = env.scenario.state["records"][env.scenario.bindings["target"]]["cabin"]
        blocked.append(cabin == "basic_economy")
        assert env.scenario.klass == ("blocked" if cabin == "basic_economy" else "allowed")
    assert 0.4 <= sum(blocked) / 50 <= 0.6
    refuse = [run_policy(env, probe_policy("always_refuse"), seed)[1].get("success", False) for seed in range(50)]
    assert sum(refuse) == 0  # a refusal that names no reason succeeds nowhere


def test_basic_economy_in_words_explains(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == "blocked")
    target = env.scenario.bindings["target"]
    read = call(READ, reservation_id=target)
    for said, score in [
        (f"I'm sorry, reservation {target} is basic economy, and basic economy flights cannot be modified.", 1.0),
        (f"I'm sorry, reservation {target} is basic_economy, so its flights cannot be changed.", 1.0),
        (f"I'm sorry, I can't change the flights of reservation {target} under our policy.", 0.0),
        (json.dumps(env.scenario.state["records"][target]), 0.0),
    ]:
        assert run_actions(env, [read, said], seed)[0] == score, said


def test_allowed_change_scores_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.klass == "allowed")
    target = env.scenario.bindings["target"]
    read, update = call(READ, reservation_id=target), call(UPDATE, **write_args(env, UPDATE))
    ask = f"Shall I change the flights of reservation {target} as you asked (yes/no)?"
    assert run_actions(env, [read, ask, update, "Done. Have a nice day."], seed)[0] == 1.0
    # weights: write_target 2, read_first 1: changing the flights without looking earns 2/3
    assert run_actions(env, [ask, update, "Done. Have a nice day."], seed)[0] == pytest.approx(2 / 3)
    # the policy asks for a yes before every write: the same change without asking earns nothing
    score, info = run_actions(env, [read, update, "Done. Have a nice day."], seed)
    assert score == 0.0 and info["reward_breakdown"]["confirmed_writes"] == 0.0
    # refusing a change the policy allows earns nothing
    refusal = f"I'm sorry, I can't change the flights of reservation {target}."
    assert run_actions(env, [read, refusal], seed)[0] == 0.0


def test_the_new_flights_asked_for_are_on_the_reservations_own_route(env_cls):
    """Issue 26: every scenario asked for the same two flights (one real call's), whatever the reservation's route. The
    request now restates the reservation's own flights a few days later: the same flight numbers, in order, each
    date moved by the same 1-7 days; the oracle still earns 1.0."""
    env = env_cls()
    asked_for = set()
    for seed in range(30):
        env.reset(seed=seed)
        if env.scenario.klass != "allowed":
            continue
        held = env.scenario.state["records"][env.scenario.bindings["target"]]["flights"]
        flights = write_args(env, UPDATE)["flights"]
        assert [f["flight_number"] for f in flights] == [f["flight_number"] for f in held]
        moves = {(dt.date.fromisoformat(f["date"]) - dt.date.fromisoformat(h["date"])).days
                 for f, h in zip(flights, held)}
        assert len(moves) == 1 and 1 <= moves.pop() <= 7
        asked_for.add(json.dumps(flights))
        assert run_actions(env, env.oracle_actions(), seed)[0] == 1.0
    assert len(asked_for) >= 8
