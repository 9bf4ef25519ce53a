"""Load: vectorized envs under random actions. Steps per second for 1, 2 and 8 envs (sync and async), then 100,000
steps of `gym.make_vec(..., num_envs=8, vectorization_mode="async")` with autoreset, checking memory growth.

Floor: the 100k run finishes without error, what the vector env returns on its first steps (observations, rewards,
terminations, truncations, infos) equals what single envs given the same seeds and actions return, and the RSS of the
parent plus the workers grows by at most 10% between the end of the warm-up (10% of the steps) and the end.

`python -m benchmarks load`; `TRACE_ENVS_LOAD_STEPS` changes the long run's length, `TRACE_ENVS_LOAD_ENV` its env.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

import trace_envs  # noqa: F401  (registers the envs)
from trace_envs.generate.policies import random_action
from trace_envs.registry import registered

GROWTH_CEILING = 0.10
ODD_ACTIONS = [
    "",
    "Hello, how can I help you?",
    "Shall I proceed? Please confirm.",
    '{"name": "no_such_tool", "arguments": {}}',
    '{"name": ',
    "<tool_call>[1, 2]</tool_call>",
    "x" * 5000,
    "caf\u00e9 \u2014 \ud83d\ude00",
]


def default_env_id() -> str:
    wanted = os.environ.get("TRACE_ENVS_LOAD_ENV")
    ids = sorted(registered())
    if not ids:
        raise RuntimeError("no trace env is registered")
    if wanted:
        return wanted if wanted.startswith("trace/") else f"trace/{wanted}"
    return ids[0]


def action_pool(env_id: str, n: int = 512, seed: int = 0) -> list[str]:
    """Random actions for an env: type-correct random tool calls and random text (the generator's random policy),
    the oracle's actions for a few seeds (so episodes also reach writes and the terminal reward), and odd strings."""
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(seed)
    pool = [random_action(env, rng, t) for t in range(n)]
    for s in range(8):
        env.reset(seed=s)
        pool += env.oracle_actions()
    return pool + ODD_ACTIONS


def env_info(infos: dict[str, Any], index: int) -> dict[str, Any]:
    """The info dict env `index` of a vector env returned, out of Gymnasium's batched form (`key` arrays with
    `_key` masks, nested dicts batched the same way), with numpy scalars back as Python values."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        mask = infos.get(f"_{key}")
        if key.startswith("_") or mask is None or not mask[index]:
            continue
        if isinstance(value, dict):
            out[key] = env_info(value, index)
        else:
            item = value[index]
            out[key] = item.item() if isinstance(item, np.generic) else item
    return out


def _batched_form(info: dict[str, Any]) -> dict[str, Any]:
    """A single env's info as it survives batching: Gymnasium drops empty nested dicts."""
    return {k: _batched_form(v) if isinstance(v, dict) else v for k, v in info.items() if v != {}}


class SingleEnvMirror:
    """One plain `gym.make` env per vector slot, reset with the vector env's seeds (`seed + i`), stepped with the same
    actions and autoreset the way Gymnasium's vector envs do by default (the step after an episode ends is a reset that
    returns reward 0), so each step of the vector env can be compared with what the envs give alone."""

    def __init__(self, env_id: str, num_envs: int):
        """`env_id`: the registered env; `num_envs`: the vector env's number of copies."""
        self.envs = [gym.make(env_id) for _ in range(num_envs)]
        self.ended = [False] * num_envs

    def reset(self, seed: int) -> list[tuple[str, dict[str, Any]]]:
        self.ended = [False] * len(self.envs)
        return [env.reset(seed=seed + i) for i, env in enumerate(self.envs)]

    def step(self, actions: list[str]) -> list[tuple[str, float, bool, bool, dict[str, Any]]]:
        out = []
        for i, (env, action) in enumerate(zip(self.envs, actions)):
            if self.ended[i]:
                obs, info = env.reset()
                out.append((obs, 0.0, False, False, info))
            else:
                out.append(env.step(action))
            self.ended[i] = bool(out[-1][2] or out[-1][3])
        return out

    def close(self) -> None:
        for env in self.envs:
            env.close()


def assert_matches(where: str, vector_out: tuple, single_out: list[tuple]) -> None:
    """Raise AssertionError naming `where` (mode and step) and the first field where a vector env's return
    (`(obs, info)` after reset, `(obs, reward, terminated, truncated, info)` after step) differs from the single envs'."""
    names = ("observation", "info") if len(vector_out) == 2 else ("observation", "reward", "terminated", "truncated", "info")
    for i, single in enumerate(single_out):
        for name, batch, want in zip(names, vector_out, single):
            got = env_info(batch, i) if name == "info" else batch[i]
            if name == "info":
                want = _batched_form(want)
            if got != want:
                shown = repr(got)[:120]
                raise AssertionError(f"{where}, env {i}: {name} differs from the single env's: got {shown}, "
                                     f"want {repr(want)[:120]}")


def rss_bytes(pid: int) -> int:
    try:
        import psutil

        return psutil.Process(pid).memory_info().rss
    except ImportError:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    return 0


@dataclass
class LoadResult:
    env_id: str
    num_envs: int
    mode: str
    steps: int
    seconds: float
    episodes: int
    verified: int = 0
    rss_warm: dict[str, int] = field(default_factory=dict)
    rss_end: dict[str, int] = field(default_factory=dict)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else float("inf")

    @property
    def growth(self) -> float:
        warm, end = sum(self.rss_warm.values()), sum(self.rss_end.values())
        return (end - warm) / warm if warm else 0.0


def _pids(envs) -> dict[str, int]:
    pids = {"parent": os.getpid()}
    for i, proc in enumerate(getattr(envs, "processes", []) or []):
        pids[f"worker{i}"] = proc.pid
    return pids


def drive(env_id: str, num_envs: int, mode: str, total_steps: int, seed: int = 0, warmup: float = 0.1,
          verify_steps: int = 50) -> LoadResult:
    """Step `num_envs` copies of `env_id` with random actions until `total_steps` env steps are done (autoreset
    restarts finished episodes); measures wall time and RSS after the warm-up and at the end. The reset and the first
    `verify_steps` vector steps are compared with single envs given the same seeds and actions (before the clock
    starts, so throughput is not the mirror's); a difference raises AssertionError."""
    pool = action_pool(env_id, seed=seed)
    rng = np.random.default_rng(seed + 1)
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
    mirror = SingleEnvMirror(env_id, num_envs)
    try:
        assert_matches(f"{mode} reset", envs.reset(seed=seed), mirror.reset(seed))
        verified = 0
        for it in range(verify_steps):
            actions = [pool[k] for k in rng.integers(len(pool), size=num_envs)]
            assert_matches(f"{mode} step {it}", envs.step(actions), mirror.step(actions))
            verified += num_envs
        iterations = max(1, total_steps // num_envs)
        warm_at = max(1, int(iterations * warmup))
        episodes = 0
        rss_warm: dict[str, int] = {}
        start = time.perf_counter()
        for it in range(iterations):
            picks = rng.integers(len(pool), size=num_envs)
            _, rewards, terminated, truncated, _ = envs.step([pool[k] for k in picks])
            if not np.all((rewards >= 0.0) & (rewards <= 1.0)):
                raise AssertionError(f"reward outside [0, 1]: {rewards}")
            episodes += int(np.sum(terminated | truncated))
            if it + 1 == warm_at:
                rss_warm = {k: rss_bytes(p) for k, p in _pids(envs).items()}
        seconds = time.perf_counter() - start
        rss_end = {k: rss_bytes(p) for k, p in _pids(envs).items()}
    finally:
        envs.close()
        mirror.close()
    return LoadResult(env_id, num_envs, mode, iterations * num_envs, seconds, episodes, verified, rss_warm, rss_end)


def throughput(env_id: str, steps: int = 4000, sizes: tuple[int, ...] = (1, 2, 8)) -> list[str]:
    lines = []
    for num_envs in sizes:
        for mode in ("sync", "async"):
            r = drive(env_id, num_envs, mode, steps)
            lines.append(f"{env_id} {mode:5s} x{num_envs}: {r.steps_per_second:8.0f} steps/s "
                         f"({r.steps} steps, {r.episodes} episodes)")
    return lines


def long_run(env_id: str, steps: int, num_envs: int = 8) -> list[str]:
    r = drive(env_id, num_envs, "async", steps)
    mib = lambda d: sum(d.values()) / 2**20  # noqa: E731
    per = ", ".join(f"{k} {r.rss_warm[k] / 2**20:.0f}->{r.rss_end[k] / 2**20:.0f}" for k in r.rss_end if k in r.rss_warm)
    ok = r.growth <= GROWTH_CEILING
    return [
        f"{env_id} async x{num_envs}: {r.steps} steps, {r.episodes} episodes in {r.seconds:.1f} s "
        f"({r.steps_per_second:.0f} steps/s); the first {r.verified} steps equal single envs' (observations, rewards, "
        f"ends, infos)",
        f"RSS parent+workers after warm-up {mib(r.rss_warm):.0f} MiB, at the end {mib(r.rss_end):.0f} MiB: "
        f"growth {100 * r.growth:+.1f}% (floor <= {100 * GROWTH_CEILING:.0f}%) {'PASS' if ok else 'FAIL'}",
        f"per process (MiB): {per}",
    ]


def run() -> list[str]:
    env_id = default_env_id()
    steps = int(os.environ.get("TRACE_ENVS_LOAD_STEPS", "100000"))
    return throughput(env_id) + long_run(env_id, steps)


def smoke() -> list[str]:
    """One and two envs, sync and async, a few hundred steps; the long run over two workers."""
    env_id = default_env_id()
    return throughput(env_id, steps=200, sizes=(1, 2)) + long_run(env_id, 400, num_envs=2)


if __name__ == "__main__":
    print("\n".join(run()))
