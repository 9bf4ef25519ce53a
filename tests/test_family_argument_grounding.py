"""argument_grounding: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.generate.policies import passive_action, random_action, run_actions, run_policy, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.generate.validate import REQUIRED_MUTANTS, env_class, import_module_from
from trace_envs.runtime.world import call
from trace_envs.spec.io import load_specs

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_payment_id_from_reservation"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    spec = load_specs(ROOT / "examples" / "specs" / f"{NAME}.json")[0]
    out = tmp_path_factory.mktemp("gen")
    result = generate_one(spec, out)
    return spec, result, env_class(import_module_from(out / NAME / MODULE_FILE))


def test_published_and_report_ok(published):
    spec, result, _ = published
    assert spec.family == "argument_grounding" and spec.params["source_field"] == "payment_history.0.payment_id"
    assert result.published, result.error
    report = result.report
    assert report.ok, report.problems
    assert report.oracle == 1.0 and report.env_checker == "passed"
    assert set(REQUIRED_MUTANTS) <= set(report.mutants)
    assert all(score < 1.0 for score in report.mutants.values())
    assert report.random < 0.2 and report.passive < 0.2


def test_oracle_mutants_and_baselines_per_seed(published):
    _, _, cls = published
    env = cls()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0
        grounded = env.scenario.bindings["grounded"]
        records = env.scenario.state["records"]
        values = [r["payment_history"][0]["payment_id"] for r in records.values()]
        assert len(set(values)) == len(values)  # distractors carry other values
        assert grounded == records[env.scenario.bindings["target"]]["payment_history"][0]["payment_id"]
        assert grounded not in env.opening  # the user gives only the key
        for mutant in REQUIRED_MUTANTS:
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] < 1.0, (seed, mutant)
    assert sum(run_policy(env, random_action, s)[0] for s in range(50)) / 50 < 0.2
    assert sum(run_policy(env, passive_action, s)[0] for s in range(50)) / 50 < 0.2


def test_deterministic(published):
    _, _, cls = published
    a, b = cls(), cls()
    for seed in (0, 3, 11):
        obs_a, _ = a.reset(seed=seed)
        obs_b, _ = b.reset(seed=seed)
        assert obs_a == obs_b and a.oracle_actions() == b.oracle_actions() and a.mutant_actions() == b.mutant_actions()
        assert run_scripted(a, "oracle", seed)[1]["messages"] == run_scripted(b, "oracle", seed)[1]["messages"]


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
