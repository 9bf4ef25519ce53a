"""Mining benchmark: recovery of planted deficits over 20 seeds, and offline mining time / peak memory at scale; or,
with `--random N`, recovery on N domains drawn by the domain randomizer.

- precision / recall of recovered deficits per seed (2,000 planted runs each), decoy and noise never reported, on each
  planted domain (retail; help desk, with its own tool names and record shapes: TRACE_BENCH_HELPDESK_SEEDS, default 10);
- offline mining of 1,000 / 10,000 (and, with TRACE_BENCH_100K=1, 100,000) planted runs, each in a fresh subprocess
  pinned to one core: wall time and peak RSS (resource.getrusage). Runs are generated and labelled as a stream.
- `python -m benchmarks mining --random 30`: seeds 0..29 of `trace_envs.datasets.randomized`, each domain's runs
  written in its own source format and mined as a user would (`trace-envs mine FILE --offline`, in process), scored as
  the external domains' score.py scores; recall and precision per family, per axis value and on average, and every
  domain's result as JSON (`--random-out PATH`, default out/random_mining.json). See docs/randomizer.md.

Floors (issue 28): 1,000 runs within 1 s and 10,000 within 5 s on one core; near-linear growth; peak memory under
2 GiB at 100,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SEEDS = 20
MINING_FLOORS_S = {1000: 1.0, 10_000: 5.0}
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
    # Labelling and selection over the runs, the part that grows with them; the check that each kept capability
    # publishes is generate's validation, a fixed cost per kept spec that bench_env's generation figure measures.
    res = mine(iter_planted(n_runs, seed=0), options=MineOptions(profile_sample=2000, check_publish=False))
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


def mine_like_a_user(path: Path, out: Path) -> list[dict]:
    """`trace-envs mine PATH -o OUT --offline -q`, in this process; the kept capabilities as capabilities.json holds
    them (every domain's, when the file holds several)."""
    import contextlib
    import io

    from trace_envs.cli.mine_cmd import mine as mine_command

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        mine_command([str(path)], out=out, offline=True, quiet=True)
    caps = []
    for found in sorted(out.rglob("capabilities.json")):
        data = json.loads(found.read_text())
        caps += data if isinstance(data, list) else data.get("capabilities", [])
    return caps


def random_domain_result(seed: int) -> dict:
    """Draw domain `seed`, write its runs in its format, mine them as a user would, and score what was kept."""
    import tempfile

    from trace_envs.datasets.randomized import random_domain

    dom = random_domain(seed)
    runs = dom.runs()
    error = None
    with tempfile.TemporaryDirectory() as tmp:
        path = dom.write_runs(runs, tmp)
        try:
            caps = mine_like_a_user(path, Path(tmp) / "mined")
        except BaseException as exc:  # a miner crash or refusal is this domain's result, not the benchmark's end
            if isinstance(exc, KeyboardInterrupt):
                raise
            caps, error = [], f"{type(exc).__name__}: {exc}".strip()
    score = dom.score_recovery(caps)
    return {
        "seed": seed, "domain": dom.name, "axes": dom.axes, "n_families": len(dom.families),
        "runs": len(runs), "failed": sum(not r.success for r in runs), "error": error,
        "deficits": {name: {"family": d.family, "rate": d.rate, "tools": list(d.tools),
                            "shown_in": sum(name in r.meta["planted"]["deficits"] for r in runs),
                            "recovered": name in score["found"]} for name, d in dom.deficits.items()},
        "kept": [{"name": c.get("name"), "family": c.get("family"),
                  "tools": sorted({t.get("name") if isinstance(t, dict) else t for t in c.get("tools") or []}),
                  "right": c.get("name") not in {w["name"] for w in score["false_findings"]}} for c in caps],
        "recall": score["recall"], "precision": score["precision"], "false_findings": score["false_findings"],
    }


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.2f}" if den else "  - "


def random_table(results: list[dict]) -> list[str]:
    """The per-family and per-axis-value table of randomizer results, with the means."""
    from trace_envs.datasets.randomized import AXES, FAMILIES

    def tally(rows: list[tuple[str, list[dict], list[dict] | None]]) -> list[str]:
        """One line per row; `kept` None where precision has no meaning (a deficit's rate)."""
        out = []
        for label, deficits, kept in rows:
            found = sum(d["recovered"] for d in deficits)
            line = f"{label:<44} {len(deficits):>7} {found:>9} {_ratio(found, len(deficits)):>6}"
            if kept is not None:
                right = sum(k["right"] for k in kept)
                line += f" {len(kept):>5} {right:>5} {_ratio(right, len(kept)):>9}"
            out.append(line)
        return out

    head = f"{'':<44} {'planted':>7} {'recovered':>9} {'recall':>6} {'kept':>5} {'right':>5} {'precision':>9}"
    all_deficits = [d for r in results for d in r["deficits"].values()]
    all_kept = [k for r in results for k in r["kept"]]
    lines = ["per family (a kept capability counts for the family it was kept as)", head]
    lines += tally([(f, [d for d in all_deficits if d["family"] == f], [k for k in all_kept if k["family"] == f])
                    for f in FAMILIES])
    others = sorted({k["family"] for k in all_kept} - set(FAMILIES))
    lines += tally([(f"{f} (no deficit of it)", [], [k for k in all_kept if k["family"] == f]) for f in others])
    lines += ["per axis value", head]
    for axis, values in AXES.items():
        rows = []
        for v in values:
            sel = [r for r in results if r["axes"][axis] == v]
            rows.append((f"{axis}={v} ({len(sel)} domains)", [d for r in sel for d in r["deficits"].values()],
                         [k for r in sel for k in r["kept"]]))
        lines += tally(rows)
    lines += tally([(f"families per domain={n} ({sum(r['n_families'] == n for r in results)} domains)",
                     [d for r in results if r["n_families"] == n for d in r["deficits"].values()],
                     [k for r in results if r["n_families"] == n for k in r["kept"]])
                    for n in sorted({r["n_families"] for r in results})])
    lines += tally([(f"deficit rate={rate}", [d for d in all_deficits if d["rate"] == rate], None)
                    for rate in sorted({d["rate"] for d in all_deficits})])
    lines += ["all", head] + tally([(f"{len(results)} domains", all_deficits, all_kept)])
    recall = sum(r["recall"] for r in results) / len(results)
    precisions = [r["precision"] for r in results if r["precision"] is not None]
    precision = sum(precisions) / len(precisions) if precisions else 0.0
    decoys = sum(f["decoy"] for r in results for f in r["false_findings"])
    errors = [r for r in results if r["error"]]
    lines.append(f"mean recall per domain {recall:.3f}; mean precision per domain {precision:.3f} over the "
                 f"{len(precisions)} domains that kept anything ({len(results) - len(precisions)} kept nothing); "
                 f"false findings naming the decoy: {decoys}; domains the miner failed on: {len(errors)}")
    for r in errors:
        why = " ".join(r["error"].split())
        lines.append(f"  seed {r['seed']} ({r['domain']}, {r['axes']['source_format']}): {why[:200]}")
    family_ok = all(sum(d["recovered"] for d in ds) >= 0.7 * len(ds) for f in FAMILIES
                    if (ds := [d for d in all_deficits if d["family"] == f]))
    axis_ok = all(sum(d["recovered"] for d in ds) >= 0.7 * len(ds) for axis, values in AXES.items() for v in values
                  if (ds := [d for r in results if r["axes"][axis] == v for d in r["deficits"].values()]))
    met = recall >= 0.85 and precision >= 0.9 and family_ok and axis_ok
    lines.append("target (issue 25): mean recall >= 0.85, precision >= 0.9, no family and no axis value below 0.7: "
                 f"{'met' if met else 'not met'}")
    return lines


def random_mining(n_seeds: int, out: Path | None = None) -> list[str]:
    """Mine `n_seeds` randomized domains (seeds 0..n-1); the table, and every domain's result written to `out`."""
    from trace_envs.atomic import write_text_atomic

    results = [random_domain_result(seed) for seed in range(n_seeds)]
    lines = [f"planted-deficit recovery on {n_seeds} randomized domains (seeds 0-{n_seeds - 1}; offline proposer, "
             "default thresholds, mined per domain as `trace-envs mine FILE --offline`)"]
    lines += random_table(results)
    if out is not None:
        write_text_atomic(out, json.dumps({"seeds": n_seeds, "domains": results}, indent=1) + "\n")
        lines.append(f"wrote {out}")
    return lines


def run(seeds: int = SEEDS, helpdesk_seeds: int | None = None, runs: int = RUNS_PER_SEED,
        sizes: list[int] | None = None) -> list[str]:
    """Recovery over `seeds` seeds of `runs` runs (help desk: `helpdesk_seeds`, TRACE_BENCH_HELPDESK_SEEDS or 10),
    then offline mining of each of `sizes` runs (1,000 and 10,000; TRACE_BENCH_100K=1 adds 100,000). With
    TRACE_BENCH_RANDOM=N, N randomized domains instead (`python -m benchmarks mining --random N`)."""
    if os.environ.get("TRACE_BENCH_RANDOM"):
        out = Path(os.environ.get("TRACE_BENCH_RANDOM_OUT", "out/random_mining.json"))
        return random_mining(int(os.environ["TRACE_BENCH_RANDOM"]), out)
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
    for m in results:
        floor = MINING_FLOORS_S.get(m["runs"])
        if floor is not None:
            lines.append(f"floor {m['runs']:,} runs within {floor:g} s: {'OK' if m['seconds'] <= floor else 'FAIL'} "
                         f"({m['seconds']:.2f} s)")
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
