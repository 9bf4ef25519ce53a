"""argument_grounding: the payment id comes from the reservation the agent reads, never from a guess."""

from __future__ import annotations

import pytest

from _family import committed_example, write_args
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.runtime.world import call

NAME = "airline_payment_id_from_reservation"
READ, WRITE = "get_reservation_details", "update_reservation_baggages"


@pytest.fixture(scope="module")
def published():
    return committed_example(NAME)


def test_grounded_value_is_only_in_the_target_record(published):
    _, cls = published
    env = cls()
    for seed in range(20):
        env.reset(seed=seed)
        grounded = env.scenario.bindings["grounded"]
        records = env.scenario.state["records"]
        values = [r["payment_history"][0]["payment_id"] for r in records.values()]
        assert len(set(values)) == len(values)  # the user's other reservations carry other values
        assert grounded == records[env.scenario.bindings["target"]]["payment_history"][0]["payment_id"]
        assert grounded not in env.opening  # the user gives only the key


def test_planted_episodes_score_exactly(published):
    _, cls = published
    env = cls()
    env.reset(seed=2)
    target = env.scenario.bindings["target"]
    args = write_args(env, WRITE)
    read = call(READ, reservation_id=target)
    ask = f"I'm about to update the baggages of reservation {target}. Do you confirm (yes/no)?"
    assert run_actions(env, [read, ask, call(WRITE, **args), "Done. Have a nice day."], 2)[0] == 1.0
    # a made-up payment id zeroes the score (a write outside the task)
    invented = dict(args, payment_id="credit_card_0000000")
    score, info = run_actions(env, [read, ask, call(WRITE, **invented), "Done."], 2)
    assert score == 0.0 and info["reward_breakdown"]["no_other_write"] == 0.0
    # weights: grounded_write 3, read_first 1, no_invented_values 1: the right id before reading it (a lucky guess
    # the check cannot tell from knowledge, but the order and the source can) earns 3/5
    assert run_scripted(env, "mutant", 2, mutant="swap_calls")[0] == pytest.approx(3 / 5)
    assert run_scripted(env, "mutant", 2, mutant="forbidden_extra_call")[0] == 0.0


def test_source_field_absent_is_created(published, tmp_path):
    spec, _ = published
    other = spec.model_copy(update={"name": "grounding_new_field", "params": {"source_field": "refund.method.0.id"}})
    result = generate_one(other.with_hash(), tmp_path, seeds=10)
    assert result.published, result.error
    env = env_class(import_module_from(tmp_path / "grounding_new_field" / MODULE_FILE))()
    env.reset(seed=0)
    record = env.scenario.state["records"][env.scenario.bindings["target"]]
    assert record["refund"]["method"][0]["id"] == env.scenario.bindings["grounded"]
