"""Env steps over HTTP (`trace-envs serve`, OpenEnv's WebSocket sessions) against the same env in process.

Both sides play the same oracle episodes (reset + every oracle action, seeds 0..N-1) through `gym.make(env_id)`: in
process directly, remotely through `trace_envs.serving.remote.RemoteEnv` (one session), then with 8 sessions at once from 8
threads. Reported: the server's start time (spawn to /health answering); steps/s counting only the time inside
`step` calls, and episodes/s (reset included); each as a ratio of remote to in-process measured in this run.

Floor: one remote session reaches at least 1/50 of the in-process steps/s (the transport is the cost: a local
WebSocket round trip plus the JSON of the observation and of what the step added to its info).

`python -m benchmarks serve`; `TRACE_ENVS_SERVE_EPISODES` changes the number of episodes (default 200).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import gymnasium as gym

import trace_envs  # noqa: F401  (registers the envs)
from trace_envs.serving.health import free_port, wait_for_server
from trace_envs.registry import registered

FLOOR = 1 / 50


def _episodes(make, seeds: list[int], plans: dict[int, list[str]]) -> tuple[int, float, float]:
    """Play each seed's oracle episode on an env from `make()`: (steps, seconds inside step calls, total seconds)."""
    env = make()
    steps, in_step = 0, 0.0
    start = time.perf_counter()
    for seed in seeds:
        env.reset(seed=seed)
        for action in plans[seed]:
            t = time.perf_counter()
            env.step(action)
            in_step += time.perf_counter() - t
            steps += 1
    total = time.perf_counter() - start
    env.close()
    return steps, in_step, total


def _start_server(env_id: str) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "trace_envs", "serve", env_id, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url, timeout_s=180, process=proc)
    except (RuntimeError, TimeoutError):
        proc.kill()
        raise
    return proc, url, time.perf_counter() - start


def run() -> list[str]:
    from trace_envs.serving.remote import RemoteEnv

    env_id = sorted(registered())[0]
    n = int(os.environ.get("TRACE_ENVS_SERVE_EPISODES", "200"))
    seeds = list(range(n))
    probe = gym.make(env_id)
    plans = {}
    for seed in seeds:
        probe.reset(seed=seed)
        plans[seed] = probe.unwrapped.oracle_actions()
    probe.close()

    def local() -> gym.Env:
        return gym.make(env_id)

    steps, local_step_s, local_total = _episodes(local, seeds, plans)
    proc, url, started = _start_server(env_id)
    try:
        _, remote_step_s, remote_total = _episodes(lambda: RemoteEnv(url), seeds, plans)
        shards = [seeds[i::8] for i in range(8)]
        walls = [0.0] * 8

        def worker(i: int) -> None:
            walls[i] = _episodes(lambda: RemoteEnv(url), shards[i], plans)[2]

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        parallel_total = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    ratio = local_step_s / remote_step_s
    return [
        f"{env_id}: server start {started:.1f} s (spawn to /health answering)",
        f"steps/s (inside step): in process {steps / local_step_s:,.0f} | over HTTP, 1 session "
        f"{steps / remote_step_s:,.0f} ({1e3 * remote_step_s / steps:.2f} ms/step) = {ratio:.4f}x (1/{1 / ratio:.0f}) "
        f"(floor >= 1/50) {'PASS' if ratio >= FLOOR else 'FAIL'}",
        f"episodes/s (reset + {steps / n:.1f} steps): in process {n / local_total:,.0f} | over HTTP, 1 session "
        f"{n / remote_total:,.0f} = {local_total / remote_total:.3f}x | 8 sessions from 8 threads "
        f"{n / parallel_total:,.0f} = {local_total / parallel_total:.3f}x ({n} oracle episodes each)",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
