"""confirmation_before_write: the template renders from its example spec, validates, and scores planted traces exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import passive_action, random_action, run_actions, run_policy, run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.generate.validate import REQUIRED_MUTANTS, env_class, import_module_from
from trace_envs.runtime.world import call
from trace_envs.spec.io import load_specs

ROOT = Path(__file__).resolve().parents[1]
NAME = "airline_confirm_before_baggage_update"
SEEDS = range(20)


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    spec = load_specs(ROOT / "examples" / "specs" / f"{NAME}.json")[0]
    out = tmp_path_factory.mktemp("gen")
    result = generate_one(spec, out)
    return spec, result, env_class(import_module_from(out / NAME / MODULE_FILE))


def test_published_and_report_ok(published):
    spec, result, _ = published
    assert spec.family == "confirmation_before_write" and spec.knobs.difficulty == "hard"
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
    paths = set()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0
        paths.add(env.scenario.bindings["declined"])
        for mutant in REQUIRED_MUTANTS:
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] < 1.0, (seed, mutant)
    assert paths == {True, False}  # hard: the user sometimes says no
    assert sum(run_policy(env, random_action, s)[0] for s in range(50)) / 50 < 0.2
    assert sum(run_policy(env, passive_action, s)[0] for s in range(50)) / 50 < 0.2


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


def test_deterministic(published):
    _, _, cls = published
    a, b = cls(), cls()
    for seed in (0, 3, 11):
        obs_a, _ = a.reset(seed=seed)
        obs_b, _ = b.reset(seed=seed)
        assert obs_a == obs_b and a.oracle_actions() == b.oracle_actions() and a.mutant_actions() == b.mutant_actions()
        assert run_scripted(a, "oracle", seed)[1]["messages"] == run_scripted(b, "oracle", seed)[1]["messages"]


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
