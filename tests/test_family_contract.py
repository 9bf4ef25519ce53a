"""What every family's env owes its users, checked on each committed example spec (one per family): it publishes
with a clean validation report (oracle and chatty oracle 1.0, every mutant less, random and passive below 0.2, every
exploit probe within its bound, balanced scenario classes), the oracle and every mutant behave on every seed, closing
messages ask for no confirmation, an agent following the airline policy to the letter scores 1.0 on every seed, and the
same seed gives the same episode."""

from __future__ import annotations

import re

import pytest

from _family import EXAMPLES, airline_policy, committed_example
from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import run_policy, run_scripted
from trace_envs.generate.validate import REQUIRED_MUTANTS

NAMES = sorted(p.stem for p in EXAMPLES.glob("*.json"))
SEEDS = range(20)


@pytest.fixture(scope="module", params=NAMES)
def published(request):
    return committed_example(request.param)


def test_report_is_clean(published, validated_example):
    spec, _ = published
    _, result, _ = validated_example(spec.name)
    report = result.report
    assert report.ok, report.problems
    assert report.oracle == 1.0 and report.env_checker == "passed"
    assert set(REQUIRED_MUTANTS) <= set(report.mutants) and all(v < 1.0 for v in report.mutants.values())
    assert report.random < 0.2 and report.passive < 0.2
    assert report.chatty_oracle == 1.0
    for name, probe in report.probes.items():
        limit = 0.1 if probe.kind == "content_free" else max(report.classes.values())
        assert (probe.mean if probe.kind == "content_free" else probe.success) <= limit, (name, probe)
    assert len(report.classes) == 1 or max(report.classes.values()) <= 0.6, report.classes


def test_oracle_and_every_mutant_on_every_seed(published):
    _, cls = published
    env = cls()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        closing = env.oracle_actions()[-1]
        if not closing.lstrip().startswith("{"):
            assert not re.search(DEFAULT_ASK, closing), closing
        for mutant in REQUIRED_MUTANTS:
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] < 1.0, (seed, mutant)


def test_same_seed_same_episode(published):
    _, cls = published
    a, b = cls(), cls()
    for seed in (0, 3, 11):
        assert a.reset(seed=seed)[0] == b.reset(seed=seed)[0]
        assert a.oracle_actions() == b.oracle_actions() and a.mutant_actions() == b.mutant_actions()
        assert run_scripted(a, "oracle", seed)[1]["messages"] == run_scripted(b, "oracle", seed)[1]["messages"]


def test_an_agent_following_the_airline_policy_scores_one_on_every_seed(published):
    spec, cls = published
    if spec.domain != "airline":
        pytest.skip("the policy agent is written for the airline domain")
    env, policy = cls(), airline_policy()
    scores = [run_policy(env, policy, seed)[0] for seed in SEEDS]
    assert min(scores) == 1.0, [s for s, v in zip(SEEDS, scores) if v < 1.0]
