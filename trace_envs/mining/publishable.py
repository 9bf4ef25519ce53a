"""Every kept capability publishes: the miner validates each kept spec the way `trace-envs generate` will.

A capability the statistics keep but whose env `generate` refuses (its oracle fails on a seed, a probe the reward pays)
is a miner defect, not a finding to hand a user. `publish_problem(spec)` generates the env into a scratch folder with
the full validation and returns why it was refused, or None.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from trace_envs.generate.publish import generate_one, pool_map
from trace_envs.spec.model import CapabilitySpec


def publish_problem(spec: CapabilitySpec) -> str | None:
    """Why `generate` would refuse `spec` (the first line of its report), or None when it publishes."""
    with tempfile.TemporaryDirectory(prefix="trace-envs-mine-check-") as tmp:
        result = generate_one(spec, Path(tmp))
    if result.published:
        return None
    return str(result.error or "refused").strip()


def publish_problems(specs: list[CapabilitySpec]) -> list[str | None]:
    """`publish_problem` of each spec, validated in parallel on every core."""
    return pool_map(publish_problem, specs)
