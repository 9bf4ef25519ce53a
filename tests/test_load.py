"""Load, short version: `gym.make_vec(<committed env>, num_envs=8, vectorization_mode="async")` runs 5,000 steps of
random actions (autoreset restarts finished episodes) without error, its first steps equal single envs', and the RSS
of the parent and the workers grows by at most 10% after the warm-up. Vector envs in every mode return over whole
oracle episodes exactly what single envs return. The 100,000-step run and the throughput table are
`python -m benchmarks load`."""

from __future__ import annotations

import gymnasium as gym
import pytest

from benchmarks.bench_load import GROWTH_CEILING, SingleEnvMirror, assert_matches, default_env_id, drive
from trace_envs.runtime.base import MAX_TEXT

from _reliability import committed_envs

STEPS = 5_000


@pytest.mark.skipif(not committed_envs(), reason="no committed envs")
def test_async_vector_env_under_random_load():
    result = drive(default_env_id(), num_envs=8, mode="async", total_steps=STEPS)
    assert result.steps == STEPS
    assert result.episodes > 0, "autoreset never saw an episode end"
    assert result.verified >= 8 * 50, "the benchmark compared too few steps with single envs"
    assert len(result.rss_end) == 9, f"expected the parent and 8 workers, got {sorted(result.rss_end)}"
    assert result.growth <= GROWTH_CEILING, (
        f"RSS grew {100 * result.growth:.1f}% after warm-up: {result.rss_warm} -> {result.rss_end}"
    )


MODES = [("sync", {}), ("async", {}), ("async", {"copy": False}), ("async", {"shared_memory": False})]
EPISODE_ENVS = ["airline_check_cabin_before_cancel", "airline_cancel_every_requested_reservation"]


@pytest.mark.parametrize("name", EPISODE_ENVS)
@pytest.mark.parametrize("mode,vector_kwargs", MODES, ids=["sync", "async", "async-nocopy", "async-noshm"])
def test_vector_env_equals_single_envs_over_oracle_episodes(name, mode, vector_kwargs):
    """Two copies play their seed's oracle to the end (then a reset step): every observation, reward, termination,
    truncation and info equals the single env's, and the episodes end with the oracle's reward 1.0."""
    env_id = f"trace/{name}"
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    mirror = SingleEnvMirror(env_id, 2)
    try:
        first = mirror.reset(seed=3)
        assert_matches(f"{mode} reset", envs.reset(seed=3), first)
        assert all(0 < len(obs) < MAX_TEXT for obs, _ in first)
        plans = [env.unwrapped.oracle_actions() for env in mirror.envs]
        rewards: list[list[float]] = [[], []]
        for t in range(max(map(len, plans)) + 1):
            actions = [plan[t] if t < len(plan) else "Thanks, goodbye." for plan in plans]
            ended = list(mirror.ended)
            single = mirror.step(actions)
            assert_matches(f"{mode} step {t}", envs.step(actions), single)
            for i, (_, reward, term, trunc, _) in enumerate(single):
                if not ended[i] and (term or trunc) and not rewards[i]:
                    rewards[i].append(reward)
        assert rewards == [[1.0], [1.0]], f"oracle episodes did not both end with reward 1.0: {rewards}"
    finally:
        envs.close()
        mirror.close()
