"""Every candidate the offline miner proposes, on every real data set, compiles into an env that passes validation:
a mined capability is never a spec no template can serve."""

from __future__ import annotations

from pathlib import Path

import pytest

from trace_envs.generate.publish import generate_one
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETS = {
    "tau-bench-airline": [DATA / "tau-bench" / "gpt-4o-airline.json"],
    "tau2-retail": sorted((DATA / "tau2-bench" / "results").glob("*retail*.json")),
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_offline_candidate_generates(name, tmp_path):
    runs = load_runs(SETS[name]).runs
    candidates = propose_offline(build_profile(runs), runs)
    families = {c.spec.family for c in candidates}
    assert len(families) >= 7
    failures = []
    for cand in candidates:
        result = generate_one(cand.spec, tmp_path, seeds=4)
        if not result.published:
            failures.append(f"{cand.spec.name}: {result.error}")
    assert not failures, "\n".join(failures)
