"""Construct validity on the planted-deficit domains: does each mined env measure the deficit it was mined for?

Each planted domain's scripted agents (retail, help desk) carry known deficits. Mine 2,000 planted runs (with the
domain's rules), generate every kept capability into an env, then play each deficit's agent (`policy_agent({d})`) and
the deficit-free one in every env of its domain. The env mined for deficit d must score d's agent below 0.5, and the deficit-free agent
must score at least 0.95 on every env. Prints the matrix (rows: agents; columns: envs, headed by the deficit each maps
to) and PASS/FAIL per bound.

    python -m benchmarks validity        (TRACE_BENCH_SEEDS=N episodes per cell, default 20)

One matrix per domain.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from trace_envs.datasets.domains import planted_domains
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.policies import run_policy
from trace_envs.generate.publish import GenerateResult, generate_one
from trace_envs.mining.label import spec_target_tools
from trace_envs.mining.pipeline import MineOptions, MineResult, mine

RUNS = 2000
FREE_FLOOR = 0.95
DEFICIT_CEILING = 0.5


def publish(domain: str, out_dir: Path, runs: int = RUNS) -> tuple[MineResult, dict[str, GenerateResult]]:
    """Mine `runs` of the domain's planted runs (seed 0, with its rules); publish every capability kept into
    `out_dir`."""
    planted = planted_domains()[domain]
    result = mine(planted.generate(runs, 0), options=MineOptions(), rules=planted.rules)
    return result, {spec.name: generate_one(spec, out_dir, seeds=10) for spec in result.capabilities}


def matrix(seeds: int, out_dir: Path, domain: str = "retail",
           published: tuple[MineResult, dict[str, GenerateResult]] | None = None, runs: int = RUNS,
           ) -> tuple[list[str], list[str], dict[tuple[str, str], float], dict[str, str]]:
    """(agents, envs, mean reward per (agent, env), the deficit each env maps to) on one planted domain.
    `published`: what `publish(domain, out_dir, runs)` returned, when the caller has it already."""
    planted = planted_domains()[domain]
    result, results = published or publish(domain, out_dir, runs)
    envs: dict[str, type] = {}
    maps: dict[str, str] = {}
    for spec in result.capabilities:
        if not results[spec.name].published:
            print(f"   {spec.name}: not published ({results[spec.name].error})")
            continue
        envs[spec.name] = env_class(import_module_from(out_dir / spec.name / "env.py"))
        maps[spec.name] = planted.match_deficit(spec.family, spec_target_tools(spec)) or "-"
    agents = ["none", *planted.deficits]
    cells: dict[tuple[str, str], float] = {}
    for name, cls in envs.items():
        env = cls()
        for agent in agents:
            policy = planted.policy_agent(() if agent == "none" else (agent,))
            cells[(agent, name)] = sum(run_policy(env, policy, s)[0] for s in range(seeds)) / seeds
    return agents, list(envs), cells, maps


def run(seeds: int | None = None, runs: int = RUNS) -> list[str]:
    """`seeds` episodes per cell (TRACE_BENCH_SEEDS or 20) in the envs mined from `runs` planted runs."""
    seeds = seeds or int(os.environ.get("TRACE_BENCH_SEEDS", "20"))
    lines: list[str] = []
    for domain in planted_domains():
        lines += domain_lines(domain, seeds, runs)
    return lines


def smoke() -> list[str]:
    """Envs mined from 300 runs, 2 episodes a cell."""
    return run(seeds=2, runs=300)


def domain_lines(domain: str, seeds: int, runs: int = RUNS) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        agents, envs, cells, maps = matrix(seeds, Path(tmp), domain, runs=runs)
    width = max(len(e) for e in envs) if envs else 10
    lines = [f"{domain}: mean reward over {seeds} seeds; rows: the planted agent's deficit; columns: mined envs "
             "(-> deficit)"]
    lines.append(" " * 24 + "  ".join(f"{maps[e][:12]:>12}" for e in envs))
    for agent in agents:
        lines.append(f"{agent:24}" + "  ".join(f"{cells[(agent, e)]:12.2f}" for e in envs))
    lines.append("columns: " + "; ".join(f"{maps[e]} = {e}" for e in envs)[: 40 * width])
    for verdict in verdicts(envs, cells, maps, domain):
        lines.append(verdict)
    return lines


def verdicts(envs: list[str], cells: dict[tuple[str, str], float], maps: dict[str, str], domain: str = "retail"
             ) -> list[str]:
    """One line per bound, ending in PASS or FAIL: the deficit-free agent on every env, and each deficit's agent on
    the envs mined for it (a deficit no env was mined for fails)."""
    if not envs:
        return ["no env was published: FAIL"]
    free = min(cells[("none", e)] for e in envs)
    out = [f"deficit-free agent, lowest env mean {free:.2f} (>= {FREE_FLOOR}): {'PASS' if free >= FREE_FLOOR else 'FAIL'}"]
    for deficit in planted_domains()[domain].deficits:
        mapped = [e for e in envs if maps[e] == deficit]
        if not mapped:
            out.append(f"{deficit}: no env mined for it: FAIL")
            continue
        worst = max(cells[(deficit, e)] for e in mapped)
        out.append(f"{deficit}: its envs score its agent at most {worst:.2f} (< {DEFICIT_CEILING}): "
                   f"{'PASS' if worst < DEFICIT_CEILING else 'FAIL'}")
    return out
