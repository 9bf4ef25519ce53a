"""argument_grounding: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _family import publish_example

from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.generate.validate import env_class, import_module_from
from trace_envs.runtime.world import call

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_payment_id_from_reservation"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return publish_example(NAME, tmp_path_factory.mktemp("gen"))


def test_grounded_value_is_only_in_the_target_record(published):
    _, _, cls = published
    env = cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        grounded = env.scenario.bindings["grounded"]
        records = env.scenario.state["records"]
        values = [r["payment_history"][0]["payment_id"] for r in records.values()]
        assert len(set(values)) == len(values)  # distractors carry other values
        assert grounded == records[env.scenario.bindings["target"]]["payment_history"][0]["payment_id"]
        assert grounded not in env.opening  # the user gives only the key

def test_planted_invented_payment_id(published):
    """Read the reservation, then write with a made-up payment id: only read_target (w1) of 5 -> 0.2."""
    spec, _, cls = published
    env = cls()
    env.reset(seed=2)
    target = env.scenario.bindings["target"]
    args = dict(json.loads(env.oracle_actions()[1])["arguments"], payment_id="credit_card_0000000")
    actions = [call(spec.roles["read"], reservation_id=target), call(spec.roles["write"], **args), "All done. Bye."]
    score, info = run_actions(env, actions, 2)
    assert score == pytest.approx(0.2)
    assert info["reward_breakdown"] == {
        "read_target": 1.0, "grounded_write": 0.0, "no_invented_values": 0.0, "no_wrong_value": 0.0,
    }
    assert run_scripted(env, "mutant", 2, mutant="swap_calls")[0] == pytest.approx(0.8)
    assert run_scripted(env, "mutant", 2, mutant="forbidden_extra_call")[0] == pytest.approx(0.7)


def test_source_field_absent_is_created(published, tmp_path):
    spec, _, _ = published
    other = spec.model_copy(update={"name": "grounding_new_field", "params": {"source_field": "refund.method.0.id"}})
    result = generate_one(other.with_hash(), tmp_path, seeds=10)
    assert result.published, result.error
    env = env_class(import_module_from(tmp_path / "grounding_new_field" / MODULE_FILE))()
    env.reset(seed=0)
    record = env.scenario.state["records"][env.scenario.bindings["target"]]
    assert record["refund"]["method"][0]["id"] == env.scenario.bindings["grounded"]
    assert str(env.scenario.bindings["grounded"]).startswith(("credit_card_", "gift_card_"))
