"""Construct validity on each planted-deficit domain, retail and help desk (`python -m benchmarks validity`: 20 episodes
per cell): every env mined from the planted runs scores the deficit-free agent at least 0.95, and the agent carrying
the deficit an env was mined for below 0.5. An env that pays an agent for the very habit it was mined to fix fails
here."""

from __future__ import annotations

import pytest

from benchmarks.bench_validity import verdicts, matrix


@pytest.mark.parametrize("domain", ["retail", "helpdesk"])
def test_each_mined_env_fails_the_agent_with_its_deficit_and_passes_the_one_without(domain, planted_envs):
    result, published, out = planted_envs(domain)  # the benchmark's mining and publishing, shared with other tests
    _, envs, cells, maps = matrix(seeds=20, out_dir=out, domain=domain, published=(result, published))
    lines = verdicts(envs, cells, maps, domain)
    assert lines and all(line.endswith("PASS") for line in lines), "\n".join(lines)
