"""`trace-envs serve` on 127.0.0.1 (OpenEnv's server) used from this process over WebSocket: an oracle episode scores
exactly what it scores in process; 8 concurrent sessions (OpenEnv's own client) stay isolated; malformed requests get
errors and the server keeps serving; the command line's limits apply; SIGTERM stops it cleanly, with a session open.
Hostile clients: tests/test_serving_hostile.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("openenv")
gym = pytest.importorskip("gymnasium")

import trace_envs  # noqa: E402,F401
from trace_envs.serving.health import free_port  # noqa: E402

from _servers import start_server  # noqa: E402

ENVS = sorted(k for k in gym.registry if k.startswith("trace/"))
pytestmark = pytest.mark.skipif(not ENVS, reason="no generated env registered")
ENV = ENVS[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A `trace-envs serve` process: (process, base URL, stderr file)."""
    port = free_port()
    err = tmp_path_factory.mktemp("serve") / "stderr.txt"
    proc = start_server([sys.executable, "-m", "trace_envs", "serve", ENV, "--port", str(port), "--idle-timeout", "120",
                         "--max-body", "65536"], port, err, OMP_NUM_THREADS="1")
    yield proc, f"http://127.0.0.1:{port}", err
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _local_episode(seed: int, actions: list[str] | None = None) -> tuple[list[str], list[tuple]]:
    env = gym.make(ENV)
    first = env.reset(seed=seed)
    actions = actions if actions is not None else env.unwrapped.oracle_actions()
    steps = [env.step(a) for a in actions]
    env.close()
    return actions, [first, *steps]


def test_oracle_episode_over_http_scores_as_in_process(server):
    from trace_envs.serving.remote import RemoteEnv

    _, url, _ = server
    remote = RemoteEnv(url)
    try:
        for seed in range(4):
            actions, local = _local_episode(seed)
            got = [remote.reset(seed=seed), *[remote.step(a) for a in actions]]
            assert got == local  # every observation, reward, flag and info, step by step
            assert got[-1][1] == local[-1][1] == 1.0 and got[-1][2]
        state = remote.state()
        assert (state.env_id, state.seed, state.done, state.step_count) == (ENV, 3, True, len(actions))
    finally:
        remote.close()


def test_eight_concurrent_sessions_stay_isolated(server):
    """Eight sessions through OpenEnv's own GenericEnvClient, each on its own seed, stepping in lockstep with a
    different policy (the oracle, or the oracle with a wrong argument), each matching its in-process twin."""
    from openenv.core import GenericEnvClient

    from trace_envs.serving.remote import apply_info_delta

    _, url, _ = server
    n = 8
    plans = []
    for i in range(n):
        env = gym.make(ENV)
        env.reset(seed=100 + i)
        actions = env.unwrapped.oracle_actions() if i % 2 == 0 else \
            list(env.unwrapped.mutant_actions().get("wrong_argument") or ["I cannot help with that."])
        env.close()
        plans.append(_local_episode(100 + i, actions))
    barrier = threading.Barrier(n)
    results: list[list | BaseException] = [[] for _ in range(n)]

    def run(i: int) -> None:
        actions, _ = plans[i]
        try:
            with GenericEnvClient(base_url=url).sync() as client:
                barrier.wait(timeout=60)  # all eight sessions open at once
                out = [client.reset(seed=100 + i)]
                for step in range(max(len(p[0]) for p in plans)):
                    barrier.wait(timeout=60)
                    if step < len(actions):
                        out.append(client.step({"text": actions[step]}))
                results[i] = [out, client.state()]
        except BaseException as exc:  # reported below
            barrier.abort()
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for i, res in enumerate(results):
        assert not isinstance(res, BaseException), res
        out, state = res
        _, local = plans[i]
        assert (out[0].observation["text"], out[0].observation["info"]) == local[0]
        info = out[0].observation["info"]
        for got, want in zip(out[1:], local[1:]):
            text, reward, terminated, truncated, want_info = want
            # a step's info comes as what the step added (new_messages, changed keys): rebuilt, the in-process one
            assert "messages" not in got.observation["info"]
            info = apply_info_delta(info, got.observation["info"])
            assert (got.observation["text"], got.reward, got.done, info) == \
                (text, reward, terminated or truncated, want_info)
        assert state["seed"] == 100 + i and state["step_count"] == len(plans[i][0])
    rewards = [r[0][-1].reward for r in results]
    assert rewards[0::2] == [1.0] * 4 and all(r < 1.0 for r in rewards[1::2])


def _ws(url: str):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=10)


def test_malformed_requests_get_errors_not_a_crash(server):
    proc, url, _ = server
    with _ws(url) as ws:
        def ask(raw: str) -> dict:
            ws.send(raw)
            return json.loads(ws.recv(timeout=30))

        assert ask("not json")["data"]["code"] == "INVALID_JSON"
        assert ask(json.dumps({"type": "launch"}))["data"]["code"] == "UNKNOWN_TYPE"
        assert ask(json.dumps({"type": "step", "data": {"txt": "hi"}}))["data"]["code"] == "VALIDATION_ERROR"
        assert ask(json.dumps({"type": "step", "data": {"text": "x" * 200_000}}))["data"]["code"] == "VALIDATION_ERROR"
        early = ask(json.dumps({"type": "step", "data": {"text": "hello"}}))  # before any reset
        assert early["type"] == "error" and "reset" in early["data"]["message"].lower()
        # The same session still works.
        assert ask(json.dumps({"type": "reset", "data": {"seed": 1}}))["type"] == "observation"
        bad_call = ask(json.dumps({"type": "step", "data": {"text": '{"name": "no_such_tool", "arguments": {}}'}}))
        assert bad_call["type"] == "observation" and "error" in bad_call["data"]["observation"]["text"]
    for body in (b"{not json", json.dumps({"action": {"txt": 1}}).encode()):
        req = urllib.request.Request(f"{url}/step", data=body, headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.code == 422
    valid = json.dumps({"action": {"text": "hello"}}).encode()  # a valid action: once a 500 (ResetNeeded)
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(urllib.request.Request(f"{url}/step", data=valid,
                                                      headers={"Content-Type": "application/json"}), timeout=10)
    assert err.value.code == 409 and "/ws" in err.value.read().decode()
    with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
        assert resp.status == 200
    assert proc.poll() is None


@pytest.mark.parametrize("args, says", [
    (["trace/no_such_env"], "error: unknown env"),
    ([ENV, "--idle-timeout", "-1"], "error: --idle-timeout must be 0 (never) or a positive number"),
    ([ENV, "--max-body", "100"], "error: --idle-timeout must be 0 (never) or a positive number of seconds, --capacity-wait at least 0, "
                                   "--max-body at least 1024"),
], ids=["unknown env", "negative idle timeout", "tiny body limit"])
def test_bad_arguments_are_one_error_line(args, says):
    res = subprocess.run([sys.executable, "-m", "trace_envs", "serve", *args], capture_output=True, text=True,
                         timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith(says), res.stderr


def test_limits_from_the_command_line_apply(server):
    """--max-body 65536: a 70,000-byte body is a 413; --idle-timeout 120 is announced at start."""
    _, url, err = server
    body = json.dumps({"action": {"text": "x" * 70_000}}).encode()
    req = urllib.request.Request(f"{url}/step", data=body, headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(req, timeout=10)
    assert got.value.code == 413 and "65536 bytes" in got.value.read().decode()
    assert "idle timeout 120 s" in Path(err).read_text()


def test_server_stops_cleanly(server):
    """SIGTERM with a session open: the session is closed, the process exits 0 and says so, the port is free."""
    from trace_envs.serving.remote import RemoteEnv

    proc, url, err = server
    remote = RemoteEnv(url)
    remote.reset(seed=0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    text = Path(err).read_text()
    assert "stopped serving" in text and "Traceback" not in text and "ERROR" not in text, text
    # the transport error is the OpenEnv client's (a websockets ConnectionClosed or an OSError, by version)
    with pytest.raises(Exception):  # noqa: B017
        remote.step("hello")  # the server closed the session
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/health", timeout=2)
