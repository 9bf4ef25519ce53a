"""Loader benchmark: loading + validating the 4 MB tau-bench file vs a bare `json.load` of it.

Floor: `load_runs` takes at most 4x the bare `json.load` (best of 5 each, same process).
"""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
FLOOR = 4.0
REPEAT = 5


def _best(fn, repeat: int = REPEAT) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(repeat: int = REPEAT) -> list[str]:
    from trace_envs.trajectories.loaders import load_runs

    if not TAU.exists():
        return [f"bench_loaders: SKIP ({TAU} not found)"]

    def bare() -> None:
        with open(TAU, encoding="utf-8") as f:
            json.load(f)

    def loaded() -> None:
        assert len(load_runs([TAU]).runs) == 200

    bare(), loaded()  # warm the page cache and imports
    t_json = _best(bare, repeat)
    t_load = _best(loaded, repeat)
    ratio = t_load / t_json
    size_mb = TAU.stat().st_size / 1e6
    verdict = "PASS" if ratio <= FLOOR else "FAIL"
    return [
        f"bench_loaders: tau-bench {TAU.name} ({size_mb:.1f} MB, 200 runs), best of {repeat}",
        f"  json.load          {t_json * 1000:8.1f} ms",
        f"  load_runs          {t_load * 1000:8.1f} ms",
        f"  ratio              {ratio:8.2f}x  (floor <= {FLOOR:.1f}x)  {verdict}",
    ]


def smoke() -> list[str]:
    return run(repeat=1)


if __name__ == "__main__":
    print("\n".join(run()))
