"""Load, short version: `gym.make_vec(<committed env>, num_envs=8, vectorization_mode="async")` runs 5,000 steps of
random actions (autoreset restarts finished episodes) without error, and the RSS of the parent and the workers grows
by at most 10% after the warm-up. The 100,000-step run and the throughput table are `python -m benchmarks load`."""

from __future__ import annotations

import pytest

from benchmarks.bench_load import GROWTH_CEILING, default_env_id, drive

from _reliability import committed_envs

STEPS = 5_000


@pytest.mark.skipif(not committed_envs(), reason="no committed envs")
def test_async_vector_env_under_random_load():
    result = drive(default_env_id(), num_envs=8, mode="async", total_steps=STEPS)
    assert result.steps == STEPS
    assert result.episodes > 0, "autoreset never saw an episode end"
    assert len(result.rss_end) == 9, f"expected the parent and 8 workers, got {sorted(result.rss_end)}"
    assert result.growth <= GROWTH_CEILING, (
        f"RSS grew {100 * result.growth:.1f}% after warm-up: {result.rss_warm} -> {result.rss_end}"
    )
