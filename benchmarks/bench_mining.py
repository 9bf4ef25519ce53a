"""Mining benchmark: recovery of planted deficits over 20 seeds, and offline mining time / peak memory at scale.

- precision / recall of recovered deficits per seed (2,000 planted runs each), decoy and noise never reported, on each
  planted domain (retail; help desk, with its own tool names and record shapes: TRACE_BENCH_HELPDESK_SEEDS, default 10);
- offline mining of 1,000 / 10,000 (and, with TRACE_BENCH_100K=1, 100,000) planted runs, each in a fresh subprocess
  pinned to one core: wall time and peak RSS (resource.getrusage). Runs are generated and labelled as a stream.

Floors: 10,000 runs within 60 s on one core; near-linear growth; peak memory under 2 GiB at 100,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SEEDS = 20
RUNS_PER_SEED = 2000


def _peak_rss_kb() -> int:
    """This process's peak RSS. VmHWM belongs to the current address space; getrusage's ru_maxrss would carry the
    parent's peak across fork + exec, so a bench run after a torch-heavy one would report torch's memory."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _measure(n_runs: int) -> dict:
    """In this process: stream-generate and mine `n_runs` planted runs; time and peak RSS."""
    from trace_envs.datasets.planted import iter_planted, score_recovery
    from trace_envs.mining.pipeline import MineOptions, mine

    t0 = time.perf_counter()
    res = mine(iter_planted(n_runs, seed=0), options=MineOptions(profile_sample=2000))
    wall = time.perf_counter() - t0
    rss_kb = _peak_rss_kb()
    s = score_recovery((c.spec.family, c.target_tools()) for c in res.kept)
    return {"runs": res.n_runs, "seconds": wall, "peak_mib": rss_kb / 1024, "kept": len(res.kept),
            "candidates": len(res.candidates), "precision": s["precision"], "recall": s["recall"]}


def _subprocess(n_runs: int) -> dict:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    code = (
        "import os, json, sys\n"
        "if hasattr(os, 'sched_setaffinity'):\n"
        "    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "from benchmarks.bench_mining import _measure\n"
        f"print(json.dumps(_measure({n_runs})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def recovery_table(seeds: int = SEEDS, runs: int = RUNS_PER_SEED, domain: str = "retail"
                   ) -> tuple[list[str], float, float, bool]:
    from trace_envs.datasets.domains import planted_domains
    from trace_envs.mining.pipeline import mine

    planted = planted_domains()[domain]
    lines = [f"{'seed':>4} {'kept':>4} {'precision':>9} {'recall':>6}  missed / wrongly reported"]
    ps, rs, clean = [], [], True
    for seed in range(seeds):
        res = mine(planted.generate(runs, seed=seed))
        s = planted.score_recovery((c.spec.family, c.target_tools()) for c in res.kept)
        ps.append(s["precision"])
        rs.append(s["recall"])
        clean &= not s["decoys"] and not s["unmatched"]
        wrong = s["missed"] + s["decoys"] + s["unmatched"]
        lines.append(f"{seed:>4} {len(res.kept):>4} {s['precision']:>9.2f} {s['recall']:>6.2f}  {', '.join(wrong) or '-'}")
    p, r = sum(ps) / len(ps), sum(rs) / len(rs)
    lines.append(f"mean precision {p:.3f}, mean recall {r:.3f}; decoy or noise reported: {'no' if clean else 'YES'}")
    return lines, p, r, clean


def run(seeds: int = SEEDS, helpdesk_seeds: int | None = None, runs: int = RUNS_PER_SEED,
        sizes: list[int] | None = None) -> list[str]:
    """Recovery over `seeds` seeds of `runs` runs (help desk: `helpdesk_seeds`, TRACE_BENCH_HELPDESK_SEEDS or 10),
    then offline mining of each of `sizes` runs (1,000 and 10,000; TRACE_BENCH_100K=1 adds 100,000)."""
    lines = []
    if helpdesk_seeds is None:
        helpdesk_seeds = int(os.environ.get("TRACE_BENCH_HELPDESK_SEEDS", "10"))
    for domain, n_seeds in (("retail", seeds), ("helpdesk", helpdesk_seeds)):
        lines.append(f"planted-deficit recovery, {domain}, {n_seeds} seeds x {runs} runs "
                     "(offline proposer, default thresholds)")
        table, p, r, clean = recovery_table(n_seeds, runs, domain=domain)
        lines += table
        ok = p >= 0.9 and r >= 0.9 and clean
        lines.append(f"floor precision >= 0.9 and recall >= 0.9, no decoy ({domain}): {'OK' if ok else 'FAIL'}")
    if sizes is None:
        sizes = [1000, 10_000] + ([100_000] if os.environ.get("TRACE_BENCH_100K") else [])
    lines.append("offline mining at scale (one core, fresh process each; set TRACE_BENCH_100K=1 for 100,000 runs)")
    lines.append(f"{'runs':>8} {'seconds':>8} {'runs/s':>8} {'peak MiB':>9} {'kept':>4} {'P':>5} {'R':>5}")
    results = []
    for n in sizes:
        m = _subprocess(n)
        results.append(m)
        lines.append(f"{m['runs']:>8} {m['seconds']:>8.2f} {m['runs'] / m['seconds']:>8.0f} {m['peak_mib']:>9.0f} "
                     f"{m['kept']:>4} {m['precision']:>5.2f} {m['recall']:>5.2f}")
    ten = next((m for m in results if m["runs"] == 10_000), None)
    if ten:
        lines.append(f"floor 10,000 runs within 60 s: {'OK' if ten['seconds'] <= 60 else 'FAIL'} ({ten['seconds']:.1f} s)")
    if len(results) >= 2:
        a, b = results[0], results[-1]
        ratio = (b["seconds"] / a["seconds"]) / (b["runs"] / a["runs"])
        lines.append(f"growth: time per run at {b['runs']} / at {a['runs']} = {ratio:.2f} (1.0 = linear)")
    hundred = next((m for m in results if m["runs"] == 100_000), None)
    if hundred:
        lines.append(f"floor peak memory under 2 GiB at 100,000: {'OK' if hundred['peak_mib'] < 2048 else 'FAIL'}")
    return lines


def smoke() -> list[str]:
    """One seed of 300 runs per domain, one mining of 300 runs in a subprocess."""
    return run(seeds=1, helpdesk_seeds=1, runs=300, sizes=[300])


if __name__ == "__main__":
    print("\n".join(run()))
