"""Soak `trace-envs serve`: several clients on 127.0.0.1 for minutes, mixing valid oracle episodes with malformed
traffic and clients that die or hang, against one server process (issue 20).

Each client loops until the deadline (and at most `MAX_ROUNDS` rounds), one round of:
- a valid oracle episode over /ws (reset, then the oracle's steps; must score 1.0), with, before about a third of the
  steps, a hostile frame (JSON array / string / null, 100k-deep nesting, binary, a 5000-digit seed, 1e400, a lone
  surrogate, a frame over the body limit) that must get an error frame, the episode going on;
- every third round, hostile HTTP (a 2 MB body, `POST /step`, `/reset {"seed": 1e400}`, a text/plain session
  create, a foreign Origin), each with its expected 4xx;
- every fifth round, a dead client: a session left hanging (WebSocket open, silent), a WebSocket whose socket is
  dropped mid-episode, or a session made over HTTP and forgotten.

Reported: episodes played and scored 1.0; sessions lost that were not closed (the socket closed, or a reply not the
one expected, in a live episode: must be 0); slots held by dead clients past the idle timeout (a hanging socket not
closed by the server, or an HTTP-made session still known, `timeout + slack` after it was left; then, with every
client stopped, `--max-sessions` sessions must open at once: must be 0); the server's RSS at start / middle / end; and,
as ratios against a baseline measured in this run (the same clients playing clean episodes only, first), the valid
episodes per second under mixed traffic and the RSS growth. No timing asserts.

`python -m benchmarks soak --minutes 3` (default 10; `TRACE_ENVS_SOAK_MINUTES` works too), `--clients N` (default 4).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

import trace_envs  # noqa: F401  (registers the envs)
from trace_envs.serving.health import free_port, wait_for_server
from trace_envs.registry import registered

IDLE_S = 5.0  # the server's --idle-timeout here: short, so that dead clients' slots can be checked in the run
SLACK_S = IDLE_S / 4 + 2.0  # the expiry check's interval (timeout / 4) plus scheduling on a busy machine
MAX_BODY = 256 * 1024
MAX_SESSIONS = 32
MAX_ROUNDS = 100_000  # a bound on every client loop besides the deadline
HOSTILE = [
    "[1, 2, 3]", '"reset"', "null", "[" * 100_000 + "]" * 100_000, b"\x00\x01binary",
    '{"type": "reset", "data": {"seed": ' + "7" * 5000 + "}}", '{"type": "reset", "data": {"seed": 1e400}}',
    '{"type": "step", "data": {"text": "x \\ud800"}}', json.dumps({"type": "step", "data": {"text": "x" * (MAX_BODY + 1)}}),
]


@dataclass
class Tally:
    """What the clients saw (under `lock`)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    episodes: int = 0
    perfect: int = 0
    hostile_frames: int = 0
    hostile_http: int = 0
    lost: list[str] = field(default_factory=list)
    dead: list[tuple[str, float, Any]] = field(default_factory=list)  # (kind, left at, socket or session id)
    held: list[str] = field(default_factory=list)
    freed: int = 0

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)


def _ws(url: str):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=30, max_size=None)


def _ask(ws: Any, frame: str | bytes) -> dict[str, Any]:
    ws.send(frame)
    return json.loads(ws.recv(timeout=60))


def _episode(url: str, env_id: str, seed: int, plan: list[str], rng: random.Random, tally: Tally,
             hostile: bool) -> None:
    """One oracle episode over /ws; with `hostile`, a bad frame before about a third of the steps."""
    try:
        with _ws(url) as ws:
            reply = _ask(ws, json.dumps({"type": "reset", "data": {"seed": seed}}))
            if reply.get("type") != "observation":
                tally.lost.append(f"reset: {str(reply)[:120]}")
                return
            reward = None
            for action in plan:
                if hostile and rng.random() < 0.33:
                    bad = _ask(ws, rng.choice(HOSTILE))
                    if bad.get("type") != "error":
                        tally.lost.append(f"hostile frame answered {str(bad)[:120]}")
                        return
                    tally.add(hostile_frames=1)
                reply = _ask(ws, json.dumps({"type": "step", "data": {"text": action}}))
                if reply.get("type") != "observation":
                    tally.lost.append(f"step: {str(reply)[:120]}")
                    return
                reward = reply["data"].get("reward")
            ws.send(json.dumps({"type": "close"}))
        tally.add(episodes=1, perfect=int(reward == 1.0))
    except Exception as exc:  # a socket closed under a live episode: a session lost
        tally.lost.append(f"{type(exc).__name__}: {str(exc)[:120]}")


def _hostile_http(url: str, tally: Tally) -> None:
    import httpx

    json_type = {"Content-Type": "application/json"}
    create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
    cases = [
        (lambda c: c.post(f"{url}/step", content=b'{"action": {"text": "' + b"x" * 2_000_000 + b'"}}',
                          headers=json_type), 413),
        (lambda c: c.post(f"{url}/step", json={"action": {"text": "hello"}}), 409),
        (lambda c: c.post(f"{url}/reset", content=b'{"seed": 1e400}', headers=json_type), 422),
        (lambda c: c.post(f"{url}/mcp", content=json.dumps(create), headers={"Content-Type": "text/plain"}), 415),
        (lambda c: c.post(f"{url}/mcp", json=create, headers={"Origin": "https://evil.example"}), 403),
    ]
    with httpx.Client(timeout=60) as client:
        for send, status in cases:
            resp = send(client)
            if resp.status_code != status or len(resp.content) > 2000:
                tally.lost.append(f"HTTP {status} expected, got {resp.status_code} ({len(resp.content)} bytes)")
            tally.add(hostile_http=1)


def _die(url: str, rng: random.Random, tally: Tally) -> None:
    """A client that goes away without closing its session: silent, dropped, or a forgotten HTTP session."""
    import httpx

    kind = rng.choice(["hang", "drop", "http"])
    if kind == "http":
        create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
        with httpx.Client(timeout=60) as client:
            result = client.post(f"{url}/mcp", json=create).json().get("result") or {}
        if "session_id" in result:
            with tally.lock:
                tally.dead.append(("http", time.monotonic(), result["session_id"]))
        return
    ws = _ws(url)
    _ask(ws, json.dumps({"type": "reset", "data": {"seed": rng.randrange(1000)}}))
    if kind == "drop":  # as a killed process: the TCP connection ends, no close frame
        ws.socket.close()
        return
    with tally.lock:
        tally.dead.append(("hang", time.monotonic(), ws))


def _check_dead(url: str, tally: Tally, stop: threading.Event) -> None:
    """Each dead client, `IDLE_S + SLACK_S` after it was left: its slot must be free by then."""
    import httpx

    while True:
        with tally.lock:
            due = [d for d in tally.dead if time.monotonic() - d[1] > IDLE_S + SLACK_S]
            tally.dead = [d for d in tally.dead if d not in due]
            left = len(tally.dead)
        for kind, _, handle in due:
            if kind == "hang":
                closed = False
                with suppress(Exception):
                    handle.recv(timeout=0.5)  # the IDLE_TIMEOUT error frame
                    handle.recv(timeout=0.5)
                closed = handle.protocol.state.name in ("CLOSING", "CLOSED")
                handle.close()
            else:
                probe = {"jsonrpc": "2.0", "method": "tools/list", "params": {"session_id": handle}, "id": 2}
                with httpx.Client(timeout=60) as client:
                    error = (client.post(f"{url}/mcp", json=probe).json().get("error") or {}).get("message", "")
                closed = "Unknown session_id" in error
            if closed:
                tally.add(freed=1)
            else:
                tally.held.append(kind)
        if stop.is_set() and not left:
            return
        time.sleep(0.5)


def _client(url: str, env_id: str, plans: dict[int, list[str]], deadline: float, seed: int, tally: Tally,
            mixed: bool) -> None:
    rng = random.Random(seed)
    for rounds in range(MAX_ROUNDS):
        if time.monotonic() >= deadline:
            return
        episode_seed = rng.choice(list(plans))
        _episode(url, env_id, episode_seed, plans[episode_seed], rng, tally, hostile=mixed)
        try:
            if mixed and rounds % 3 == 2:
                _hostile_http(url, tally)
            if mixed and rounds % 5 == 4:
                _die(url, rng, tally)
        except Exception as exc:  # counted as a loss: these should not fail either
            tally.lost.append(f"{type(exc).__name__}: {str(exc)[:120]}")
        time.sleep(0.01)  # a shared machine: leave the server some air


def _rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def _phase(url: str, env_id: str, plans: dict[int, list[str]], clients: int, seconds: float, tally: Tally,
           mixed: bool, proc: subprocess.Popen, rss: list[tuple[float, float]]) -> float:
    """Run `clients` client threads for `seconds`, sampling the server's RSS; returns the wall time."""
    start = time.monotonic()
    deadline = start + seconds
    threads = [threading.Thread(target=_client, args=(url, env_id, plans, deadline, 7919 * i + int(mixed), tally,
                                                      mixed), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        rss.append((time.monotonic(), _rss_mb(proc.pid)))
        for t in threads:
            t.join(timeout=max(1.0, seconds / 60))
    return time.monotonic() - start


def run(minutes: float | None = None, clients: int | None = None) -> list[str]:
    minutes = float(minutes or os.environ.get("TRACE_ENVS_SOAK_MINUTES", "10"))
    clients = int(clients or os.environ.get("TRACE_ENVS_SOAK_CLIENTS", "4"))
    env_id = sorted(registered())[0]
    probe = gym.make(env_id)
    plans = {}
    for seed in range(50):
        probe.reset(seed=seed)
        plans[seed] = probe.unwrapped.oracle_actions()
    probe.close()
    port = free_port()
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, "-m", "trace_envs", "serve", env_id, "--port", str(port),
                             "--max-sessions", str(MAX_SESSIONS), "--idle-timeout", str(IDLE_S),
                             "--max-body", str(MAX_BODY)], stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url, timeout_s=180, process=proc)
        total = 60 * minutes
        baseline_s = min(60.0, max(10.0, total / 10))
        clean, rss_clean = Tally(), []
        clean_s = _phase(url, env_id, plans, clients, baseline_s, clean, False, proc, rss_clean)
        tally, rss = Tally(), []
        stop = threading.Event()
        checker = threading.Thread(target=_check_dead, args=(url, tally, stop), daemon=True)
        checker.start()
        mixed_s = _phase(url, env_id, plans, clients, max(total - baseline_s, 10.0), tally, True, proc, rss)
        stop.set()
        checker.join(timeout=IDLE_S + SLACK_S + 60)
        time.sleep(IDLE_S + SLACK_S)
        leaked = _slots_leaked(url)
    finally:
        proc.terminate()
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        if proc.poll() is None:
            proc.kill()
        log.seek(0)
        tracebacks = log.read().count("Traceback")
        log.close()
    start_mb, mid_mb, end_mb = rss[0][1], rss[len(rss) // 2][1], rss[-1][1]
    clean_rate, mixed_rate = clean.episodes / clean_s, tally.perfect / mixed_s
    held = len(tally.held) + leaked
    lost = len(tally.lost) + len(clean.lost)
    lines = [
        f"{env_id}, {clients} clients, {minutes:g} min, server --max-sessions {MAX_SESSIONS} --idle-timeout "
        f"{IDLE_S:g} --max-body {MAX_BODY}",
        f"baseline (clean episodes only, {clean_s:.0f} s): {clean.episodes} episodes, {clean.perfect} scored 1.0, "
        f"{clean_rate:.2f} episodes/s",
        f"mixed ({mixed_s:.0f} s): {tally.episodes} episodes ({tally.perfect} scored 1.0), {tally.hostile_frames} "
        f"hostile frames, {tally.hostile_http} hostile HTTP requests, {tally.freed + len(tally.held)} dead clients; "
        f"valid episodes/s {mixed_rate:.2f} = {mixed_rate / clean_rate:.2f}x the baseline",
        f"sessions lost that were not closed: {lost}{' FAIL' if lost else ''}"
        + (f" (first: {(tally.lost or clean.lost)[0]})" if lost else ""),
        f"slots held by dead clients past the timeout: {held} ({len(tally.held)} during the run, {leaked} of "
        f"{MAX_SESSIONS} at the end){' FAIL' if held else ''}",
        f"server RSS MB: start {start_mb:.1f}, middle {mid_mb:.1f}, end {end_mb:.1f} (max {max(m for _, m in rss):.1f}); "
        f"end/start {end_mb / start_mb:.3f}x, baseline start {rss_clean[0][1]:.1f}",
    ]
    lines.append(f"server tracebacks logged: {tracebacks}{' FAIL' if tracebacks else ''}")
    if tally.perfect != tally.episodes or clean.perfect != clean.episodes:
        lines.append("FAIL: an oracle episode scored under 1.0")
    return lines


def _slots_leaked(url: str) -> int:
    """With every client gone and the timeout past: how many of the `MAX_SESSIONS` slots cannot be opened at once."""
    with ExitStack() as stack:
        opened = 0
        for _ in range(MAX_SESSIONS):
            try:
                ws = stack.enter_context(_ws(url))
                if _ask(ws, json.dumps({"type": "state"})).get("type") == "state":
                    opened += 1
            except Exception:  # at capacity the server says so and closes
                pass
    return MAX_SESSIONS - opened


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_soak", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=None, help="How long (default 10).")
    parser.add_argument("--clients", type=int, default=None, help="Client threads (default 4).")
    args = parser.parse_args(argv)
    lines = run(args.minutes, args.clients)
    for line in lines:
        print(f"   {line}")
    return 1 if any("FAIL" in line for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
