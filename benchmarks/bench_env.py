"""Env step and reset cost against a bare `json.loads` of the same action; a per-turn step against a terminal one;
generation throughput for 50 specs.

Floors: median step <= 20x json.loads; median reset <= 1 ms; per-turn step (oracle episodes, mean) <= 4x terminal;
50 specs generated and validated within 60 s.
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


def first_action_index(actions: list[str]) -> int:
    """The oracle's first tool call (some families open by asking the user a question first); the first action, a
    message to the user, where the oracle makes no tool call (an env whose user, not the agent, has the tools)."""
    return next((i for i, a in enumerate(actions) if a.lstrip().startswith("{")), 0)


def step_and_reset(env_id: str, steps: int = 300, resets: int = 300, json_repeat: int = 2000) -> list[str]:
    """Median cost of the step that takes the oracle's first tool call (over `steps` seeds) and of a reset (`resets`
    times), against a `json.loads` of the same action (`json_repeat` times)."""
    env = gym.make(env_id).unwrapped  # the env itself, without Gymnasium's checker wrappers
    env.reset(seed=0)
    index = first_action_index(env.oracle_actions())
    action = env.oracle_actions()[index]
    is_call = action.lstrip().startswith("{")
    kind = "tool call" if is_call else "message, the oracle makes no tool call"
    # a message is not JSON: its baseline parses it as the JSON string it would be on the wire
    text = action if is_call else json.dumps(action)
    base = _median_ns(lambda: json.loads(text), json_repeat)
    samples = []
    for i in range(steps):
        env.reset(seed=i)
        actions = env.oracle_actions()
        for earlier in actions[:index]:
            env.step(earlier)
        action = actions[index]  # the action for this seed's scenario: a real lookup, not an error
        t = time.perf_counter_ns()
        env.step(action)
        samples.append(time.perf_counter_ns() - t)
    step = statistics.median(samples)
    reset = _median_ns(lambda: env.reset(seed=3), resets)
    ratio = step / base
    return [
        f"{env_id}: json.loads {base / 1e3:.1f} us | step ({kind}) {step / 1e3:.1f} us = {ratio:.1f}x "
        f"(floor <= 20x) {'PASS' if ratio <= 20 else 'FAIL'}",
        f"{env_id}: reset {reset / 1e6:.3f} ms (floor <= 1 ms) {'PASS' if reset <= 1e6 else 'FAIL'}",
    ]


def per_turn_cost(env_id: str, seeds: int = 100, floor: float = 4.0) -> list[str]:
    """Mean time of a step over whole oracle episodes, with `reward_mode="per_turn"` (every step scores the trace so
    far) against the default terminal mode (the last step only), the two modes' episodes interleaved seed by seed."""
    envs = {mode: gym.make(env_id, reward_mode=mode).unwrapped for mode in ("terminal", "per_turn")}
    spent = {mode: 0 for mode in envs}
    steps = {mode: 0 for mode in envs}
    for seed in range(seeds):
        for mode, env in envs.items():
            env.reset(seed=seed)
            for action in env.oracle_actions():
                t = time.perf_counter_ns()
                _, _, terminated, truncated, _ = env.step(action)
                spent[mode] += time.perf_counter_ns() - t
                steps[mode] += 1
                if terminated or truncated:
                    break
    terminal, per_turn = (spent[m] / max(steps[m], 1) for m in ("terminal", "per_turn"))
    ratio = per_turn / terminal
    return [f"{env_id}: step over oracle episodes, terminal {terminal / 1e3:.0f} us | per_turn {per_turn / 1e3:.0f} us "
            f"= {ratio:.2f}x ({steps['per_turn']} steps) (floor <= {floor:g}x) {'PASS' if ratio <= floor else 'FAIL'}"]


def generation(n: int = 50, floor_s: float = 60) -> list[str]:
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
    return [f"{n} specs generated and validated in {elapsed:.1f} s ({ok} published) (floor <= {floor_s:g} s) "
            f"{'PASS' if elapsed <= floor_s and ok == n else 'FAIL'}"]


def run(steps: int = 300, resets: int = 300, json_repeat: int = 2000, specs: int = 50,
        per_turn_seeds: int = 100) -> list[str]:
    """Every registered env, then `specs` specs generated; the floors hold at the default sizes."""
    lines: list[str] = []
    for env_id in sorted(registered()):
        lines += step_and_reset(env_id, steps, resets, json_repeat)
        lines += per_turn_cost(env_id, per_turn_seeds)
    return lines + generation(specs, floor_s=60 * specs / 50)


def smoke() -> list[str]:
    """Every registered env and one spec, a few samples each: the code runs; its figures mean nothing."""
    return run(steps=3, resets=3, json_repeat=10, specs=1, per_turn_seeds=1)


if __name__ == "__main__":
    print("\n".join(run()))
