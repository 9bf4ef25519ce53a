"""multi_request_completion: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from trace_envs.generate.policies import passive_action, random_action, run_actions, run_policy, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.generate.validate import REQUIRED_MUTANTS, env_class, import_module_from
from trace_envs.runtime.world import call
from trace_envs.spec.families import env_check
from trace_envs.spec.io import load_specs

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_cancel_every_requested_reservation"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    spec = load_specs(ROOT / "examples" / "specs" / f"{NAME}.json")[0]
    out = tmp_path_factory.mktemp("gen")
    result = generate_one(spec, out)
    return spec, result, env_class(import_module_from(out / NAME / MODULE_FILE))


def test_published_and_report_ok(published):
    spec, result, _ = published
    assert spec.family == "multi_request_completion" and spec.knobs.requests == 3
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
        assert b["targets"] == [b["target_0"], b["target_1"], b["target_2"]] and b["target"] == b["target_0"]
        assert all(t in env.opening for t in b["targets"])  # every request is in the opening message
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
