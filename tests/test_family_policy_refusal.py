"""policy_refusal: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import passive_action, random_action, run_actions, run_policy, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.generate.validate import REQUIRED_MUTANTS, env_class, import_module_from
from trace_envs.runtime.world import call
from trace_envs.spec.io import load_specs

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_refuse_basic_economy_flight_change"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    spec = load_specs(ROOT / "examples" / "specs" / f"{NAME}.json")[0]
    out = tmp_path_factory.mktemp("gen")
    result = generate_one(spec, out)
    return spec, result, env_class(import_module_from(out / NAME / MODULE_FILE))


def test_published_and_report_ok(published):
    spec, result, _ = published
    assert spec.family == "policy_refusal" and spec.params == {"field": "cabin", "blocked": ["basic_economy"]}
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
        b = env.scenario.bindings
        assert env.scenario.state["records"][b["target"]]["cabin"] == b["reason"] == "basic_economy"
        closing = env.oracle_actions()[-1]
        assert "?" not in closing and not re.search(DEFAULT_ASK, closing)
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
