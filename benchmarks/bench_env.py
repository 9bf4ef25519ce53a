"""Env step and reset cost against a bare `json.loads` of the same action; a per-turn step against a terminal one;
`import trace_envs` + one `gym.make` in a fresh process; generation throughput for 50 specs.

Floors (issue 28): median step <= 20x json.loads and under 95 us (tau2-bench's own `get_response`) on every env; median
reset <= 1 ms; per-turn step (oracle episodes, mean) <= 4x terminal; import + gym.make <= 0.8 s (the median of 3 fresh
processes); 50 specs generated and validated within 30 s with the full probe battery.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import trace_envs  # noqa: F401
from trace_envs.generate.publish import cores, generate_many
from trace_envs.registry import registered
from trace_envs.spec.io import load_specs

ROOT = Path(__file__).resolve().parents[1]
STEP_RATIO = 20
STEP_US = 95
RESET_MS = 1.0
IMPORT_S = 0.8


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
    # the baseline in blocks between the steps' blocks: this shared host's speed drifts by half within a minute, and
    # a ratio of two figures taken a minute apart measured the drift
    blocks = 10
    loads: list[float] = []
    samples = []
    for i in range(steps):
        if i % max(steps // blocks, 1) == 0:
            loads.append(_median_ns(lambda: json.loads(text), max(json_repeat // blocks, 1)))
        env.reset(seed=i)
        actions = env.oracle_actions()
        for earlier in actions[:index]:
            env.step(earlier)
        action = actions[index]  # the action for this seed's scenario: a real lookup, not an error
        t = time.perf_counter_ns()
        env.step(action)
        samples.append(time.perf_counter_ns() - t)
    step = statistics.median(samples)
    base = statistics.median(loads)
    # A seed the env has not seen builds its scenario; a replayed one (validation, a trainer cycling its seeds) reads
    # the scenario the env kept. The floor holds for the first: a trainer drawing fresh seeds pays it on every episode.
    fresh_seeds = iter(range(10_000, 10_000 + resets))
    fresh = _median_ns(lambda: env.reset(seed=next(fresh_seeds)), resets)
    replayed = _median_ns(lambda: env.reset(seed=3), resets)
    ratio = step / base
    return [
        f"{env_id}: json.loads {base / 1e3:.1f} us | step ({kind}) {step / 1e3:.1f} us = {ratio:.1f}x "
        f"(floor <= {STEP_RATIO}x and < {STEP_US} us) "
        f"{'PASS' if ratio <= STEP_RATIO and step < STEP_US * 1e3 else 'FAIL'}",
        f"{env_id}: reset on a new seed {fresh / 1e6:.3f} ms (floor <= {RESET_MS:g} ms) "
        f"{'PASS' if fresh <= RESET_MS * 1e6 else 'FAIL'} | on a replayed seed {replayed / 1e6:.3f} ms",
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


_IMPORT_CHILD = (
    "import time, sys\n"
    "t = time.perf_counter()\n"
    "import trace_envs, gymnasium as gym\n"
    "gym.make(sys.argv[1])\n"
    "print(time.perf_counter() - t, len(sys.modules))\n"
)


def import_and_make(env_id: str, repeat: int = 3) -> list[str]:
    """`import trace_envs` and one `gym.make(env_id)` in a fresh process (what every async vector worker and every
    served session pays), the median of `repeat`; against a bare `import gymnasium` in the same kind of process."""
    def child(code: str, *args: str) -> tuple[float, int]:
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout.split()
        return float(out[0]), int(out[1])

    bare = statistics.median(child("import time, sys\nt = time.perf_counter()\nimport gymnasium\n"
                                   "print(time.perf_counter() - t, len(sys.modules))")[0] for _ in range(repeat))
    runs = [child(_IMPORT_CHILD, env_id) for _ in range(repeat)]
    seconds = statistics.median(r[0] for r in runs)
    return [f"import trace_envs + gym.make({env_id}): {seconds:.2f} s, {runs[0][1]} modules = {seconds / bare:.1f}x a "
            f"bare import gymnasium ({bare:.2f} s) (floor <= {IMPORT_S:g} s) {'PASS' if seconds <= IMPORT_S else 'FAIL'}"]


def generation(n: int = 50, floor_s: float = 30) -> list[str]:
    examples = sorted((ROOT / "examples" / "specs").glob("*.json"))
    specs = [s for p in examples for s in load_specs(p)]
    variants = [specs[i % len(specs)].model_copy(update={"name": f"{specs[i % len(specs)].name[:50]}_{i}"}).with_hash()
                for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()  # as `trace-envs generate` of one file of n specs: validated on every core
        ok = sum(r.published for r in generate_many(variants, Path(tmp)))
        elapsed = time.perf_counter() - start
    return [f"{n} specs generated and validated in {elapsed:.1f} s on {cores()} cores ({ok} published) "
            f"(floor <= {floor_s:g} s) {'PASS' if elapsed <= floor_s and ok == n else 'FAIL'}"]


def run(steps: int = 300, resets: int = 300, json_repeat: int = 2000, specs: int = 50, imports: int = 3,
        per_turn_seeds: int = 100) -> list[str]:
    """Every registered env, the import, then `specs` specs generated; the floors hold at the default sizes."""
    lines: list[str] = []
    ids = sorted(registered())
    for env_id in ids:
        lines += step_and_reset(env_id, steps, resets, json_repeat)
        lines += per_turn_cost(env_id, per_turn_seeds)
    lines += import_and_make(ids[0], imports)
    return lines + generation(specs, floor_s=30 * specs / 50)


def smoke() -> list[str]:
    """Every registered env and one spec, a few samples each: the code runs; its figures mean nothing."""
    return run(steps=3, resets=3, json_repeat=10, specs=1, imports=1, per_turn_seeds=1)


if __name__ == "__main__":
    print("\n".join(run()))
