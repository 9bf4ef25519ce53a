"""handoff_to_human: rendered from its example spec, validated, and scored on planted traces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_transfer_when_trip_flown"
SEEDS = range(20)
READ, CANCEL, TRANSFER = "get_reservation_details", "cancel_reservation", "transfer_to_human_agents"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


@pytest.fixture(scope="module")
def env_cls(generated):
    return generated[2]  # publish_example already imported the published module


def _seed_where(env, self_service: bool) -> int:
    for seed in SEEDS:
        env.reset(seed=seed)
        if env.scenario.bindings["self_service"] is self_service:
            return seed
    raise AssertionError(f"no seed with self_service={self_service}")



def test_both_cases_occur_and_always_transfer_does_not_win(env_cls):
    env = env_cls()
    cases = set()
    always_transfer = []
    for seed in SEEDS:
        env.reset(seed=seed)
        b = env.scenario.bindings
        cases.add(b["self_service"])
        record = env.scenario.state["records"][b["target"]]
        assert (record["flights"][0]["status"] in ("landed", "flying")) is (not b["self_service"])
        for action in env.oracle_actions():
            if not action.startswith("{"):
                assert "?" in action or not re.search(DEFAULT_ASK, action)
        last = env.oracle_actions()[-1]
        assert last.startswith("{") or ("?" not in last and not re.search(DEFAULT_ASK, last))
        actions = [call(READ, reservation_id=b["target"]), call(TRANSFER, summary="The user needs a human agent.")]
        always_transfer.append(run_actions(env, actions, seed)[0])
    assert cases == {True, False}
    assert sum(always_transfer) / len(always_transfer) < 0.9


def test_transfer_ends_the_episode(env_cls):
    env = env_cls()
    seed = _seed_where(env, self_service=False)
    env.reset(seed=seed)
    target = env.scenario.bindings["target"]
    env.step(call(READ, reservation_id=target))
    obs, reward, terminated, truncated, info = env.step(call(TRANSFER, summary="flown segment"))
    assert obs == "Transfer successful" and terminated and not truncated and reward == 1.0 and info["success"]


def test_planted_traces_score_exactly(env_cls):
    env = env_cls()
    seed = _seed_where(env, self_service=False)
    env.reset(seed=seed)
    target = env.scenario.bindings["target"]
    read, cancel = call(READ, reservation_id=target), call(CANCEL, reservation_id=target)
    transfer = call(TRANSFER, summary="First segment already flown.")
    # needs a human; weights: read_target 1, handoff_after_read 2, no_write 1, no_other_read 1 (total 5)
    score, info = run_actions(env, [read, cancel, transfer], seed=seed)
    assert score == pytest.approx(4 / 5)
    assert info["reward_breakdown"] == {
        "read_target": 1.0, "handoff_after_read": 1.0, "no_write": 0.0, "no_other_read": 1.0,
    }
    score, _ = run_actions(env, [read, "Shall I proceed with the cancellation?", cancel, "Done. Have a nice day."], seed)
    assert score == pytest.approx(2 / 5)

    seed = _seed_where(env, self_service=True)
    env.reset(seed=seed)
    target = env.scenario.bindings["target"]
    read, cancel = call(READ, reservation_id=target), call(CANCEL, reservation_id=target)
    # self-service; weights: read_target 1, no_other_read 1, write_after_read 2, no_handoff 1, no_other_write 1 (6)
    score, info = run_actions(env, [read, transfer], seed=seed)
    assert score == pytest.approx(3 / 6)
    assert info["reward_breakdown"] == {
        "read_target": 1.0, "no_other_read": 1.0, "write_after_read": 0.0, "no_handoff": 0.0, "no_other_write": 1.0,
    }
    score, _ = run_actions(env, [read, "Shall I proceed with the cancellation?", cancel, "Done. Have a nice day."], seed)
    assert score == 1.0
