"""Env step and reset cost against a bare `json.loads` of the same action; generation throughput for 50 specs.

Floors: median step <= 20x json.loads; median reset <= 1 ms; 50 specs generated and validated within 60 s.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import trace_envs  # noqa: F401
from trace_envs.generate.publish import generate_one
from trace_envs.registry import registered
from trace_envs.spec.io import load_specs

ROOT = Path(__file__).resolve().parents[1]


def _median_ns(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t)
    return statistics.median(samples)


def step_and_reset(env_id: str) -> list[str]:
    env = gym.make(env_id).unwrapped  # the env itself, without Gymnasium's checker wrappers
    env.reset(seed=0)
    # The oracle's first tool call (some families open by asking the user a question first).
    index = next(i for i, a in enumerate(env.oracle_actions()) if a.lstrip().startswith("{"))
    action = env.oracle_actions()[index]
    base = _median_ns(lambda: json.loads(action), 2000)
    steps = []
    for i in range(300):
        env.reset(seed=i)
        actions = env.oracle_actions()
        for earlier in actions[:index]:
            env.step(earlier)
        action = actions[index]  # the call for this seed's scenario: a real lookup, not an error
        t = time.perf_counter_ns()
        env.step(action)
        steps.append(time.perf_counter_ns() - t)
    step = statistics.median(steps)
    reset = _median_ns(lambda: env.reset(seed=3), 300)
    ratio = step / base
    return [
        f"{env_id}: json.loads {base / 1e3:.1f} us | step {step / 1e3:.1f} us = {ratio:.1f}x "
        f"(floor <= 20x) {'PASS' if ratio <= 20 else 'FAIL'}",
        f"{env_id}: reset {reset / 1e6:.3f} ms (floor <= 1 ms) {'PASS' if reset <= 1e6 else 'FAIL'}",
    ]


def generation(n: int = 50) -> list[str]:
    examples = sorted((ROOT / "examples" / "specs").glob("*.json"))
    specs = [s for p in examples for s in load_specs(p)]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        ok = 0
        for i in range(n):
            spec = specs[i % len(specs)]
            variant = spec.model_copy(update={"name": f"{spec.name[:50]}_{i}"}).with_hash()
            ok += generate_one(variant, Path(tmp)).published
        elapsed = time.perf_counter() - start
    return [f"{n} specs generated and validated in {elapsed:.1f} s ({ok} published) (floor <= 60 s) "
            f"{'PASS' if elapsed <= 60 and ok == n else 'FAIL'}"]


def run() -> list[str]:
    lines: list[str] = []
    for env_id in sorted(registered()):
        lines += step_and_reset(env_id)
    return lines + generation()


if __name__ == "__main__":
    print("\n".join(run()))
