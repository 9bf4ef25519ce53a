"""`trace-envs serve` against clients that misbehave, each with the exact input that once broke it (issue 20), on a real
server on 127.0.0.1 (uvicorn in a thread of this process, a free port, small limits so that timeouts take a second):

- a /ws frame that is a JSON array, a string, `null`, nested 100k deep, binary, a 5000-digit seed, 1e400, or action
  text with a lone surrogate got SESSION_ERROR and a closed socket; now an error frame, and the episode goes on;
- `POST /mcp {"method": "openenv/session/create"}` made sessions that never expired (four locked out every client),
  also with `Content-Type: text/plain` and from any origin; idle WebSocket sessions kept their slot forever;
- `POST /step` with a valid action was a 500, `POST /reset {"seed": 1e400}` a 500;
- a 20 MB body got a 422 echoing all of it;
- every step's info re-sent the whole conversation;
- a client arriving while clients that had died held every slot (until the idle timeout) was refused at once: the
  soak lost hundreds of sessions in a row that way; now it waits for a slot (`capacity_wait_s`).
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import ExitStack

import pytest

pytest.importorskip("openenv")
gym = pytest.importorskip("gymnasium")
httpx = pytest.importorskip("httpx")
pytest.importorskip("websockets")

import trace_envs  # noqa: E402,F401
from trace_envs.serving.health import free_port, wait_for_server  # noqa: E402

ENVS = sorted(k for k in gym.registry if k.startswith("trace/"))
pytestmark = pytest.mark.skipif(not ENVS, reason="no generated env registered")
ENV = ENVS[0]
MAX_SESSIONS = 4
IDLE_S = 1.5
CAPACITY_WAIT_S = 4.0  # longer than an expired session takes to free its slot (IDLE_S and the reaper's interval)
MAX_BODY = 256 * 1024
ALLOWED = "https://lab.example.org"
JSON = {"Content-Type": "application/json"}
CREATE = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}


@pytest.fixture(scope="module")
def url():
    from trace_envs.serving.guard import ServeLimits
    from trace_envs.serving.server import make_server

    port = free_port()
    limits = ServeLimits(idle_timeout_s=IDLE_S, max_body_bytes=MAX_BODY, allow_origins=(ALLOWED,),
                         capacity_wait_s=CAPACITY_WAIT_S)
    server = make_server(ENV, "127.0.0.1", port, MAX_SESSIONS, limits)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_for_server(base, timeout_s=60)
    yield base
    server.should_exit = True
    thread.join(timeout=30)


def _ws(url: str, **kw):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=10, max_size=None, **kw)


def _ask(ws, frame) -> dict:
    ws.send(frame)
    return json.loads(ws.recv(timeout=10))


def _episode_goes_on(ws) -> None:
    """The same socket still plays: a reset, then a step of the oracle's first action."""
    reply = _ask(ws, json.dumps({"type": "reset", "data": {"seed": 3}}))
    assert reply["type"] == "observation", reply
    env = gym.make(ENV)
    env.reset(seed=3)
    action = env.unwrapped.oracle_actions()[0]
    env.close()
    step = _ask(ws, json.dumps({"type": "step", "data": {"text": action}}))
    assert step["type"] == "observation", step


def _wait_for_free_slots(url: str, n: int, timeout_s: float = 10) -> float:
    """Seconds until `n` sessions can be open at once (retrying while the server is at capacity); closes them."""
    start = time.monotonic()
    while True:
        try:
            with ExitStack() as stack:
                for _ in range(n):
                    ws = stack.enter_context(_ws(url))
                    ws.send(json.dumps({"type": "state"}))
                    reply = json.loads(ws.recv(timeout=10))
                    if reply["type"] == "error":
                        raise RuntimeError(reply["data"]["code"])
            return time.monotonic() - start
        except Exception:
            if time.monotonic() - start > timeout_s:
                raise
            time.sleep(0.2)


HOSTILE_FRAMES = {
    "json array": "[1, 2, 3]",
    "json string": '"reset"',
    "json null": "null",
    "nested 100k deep": "[" * 100_000 + "]" * 100_000,
    "binary frame": b'{"type": "reset", "data": {"seed": 0}}',
    "5000-digit seed": '{"type": "reset", "data": {"seed": ' + "7" * 5000 + "}}",
    "seed 1e400": '{"type": "reset", "data": {"seed": 1e400}}',
    "negative seed": '{"type": "reset", "data": {"seed": -1}}',
    "lone surrogate": '{"type": "step", "data": {"text": "x \\ud800"}}',
    "NaN": '{"type": "reset", "data": {"seed": NaN}}',
    "frame over the body limit": json.dumps({"type": "step", "data": {"text": "x" * (MAX_BODY + 10)}}),
}


@pytest.mark.parametrize("name", list(HOSTILE_FRAMES))
def test_hostile_frame_gets_an_error_and_the_session_goes_on(url, name):
    with _ws(url) as ws:
        assert _ask(ws, json.dumps({"type": "reset", "data": {"seed": 1}}))["type"] == "observation"
        reply = _ask(ws, HOSTILE_FRAMES[name])
        assert reply["type"] == "error" and reply["data"]["code"] in ("INVALID_JSON", "VALIDATION_ERROR"), reply
        assert len(json.dumps(reply)) < 1000  # quotes at most a prefix of the frame
        _episode_goes_on(ws)


def test_validation_error_quotes_a_prefix_of_the_input(url):
    """A 100,001-character action (over the action bound, under the body limit) is refused by OpenEnv's validation,
    whose error once carried the whole input."""
    with _ws(url) as ws:
        reply = _ask(ws, json.dumps({"type": "step", "data": {"text": "y" * 100_001}}))
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        quoted = reply["data"]["errors"][0]["input"]
        assert quoted.startswith("y" * 200) and quoted.endswith("(100001 characters)") and len(quoted) < 240
        _episode_goes_on(ws)


def test_sessions_made_over_http_expire(url):
    """Four `openenv/session/create` POSTs filled every slot (`--max-sessions 4`) for good; now they expire after the
    idle timeout and WebSocket clients get in again (one arriving while they are held waits for a slot)."""
    with httpx.Client(timeout=10) as http:
        start = time.monotonic()
        ids = [http.post(f"{url}/mcp", json=CREATE).json()["result"]["session_id"] for _ in range(MAX_SESSIONS)]
        assert len(set(ids)) == MAX_SESSIONS
        with _ws(url) as ws:  # the server is full now: the session starts when an HTTP one has expired
            assert _ask(ws, json.dumps({"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
            assert IDLE_S <= time.monotonic() - start < IDLE_S + 3
    waited = _wait_for_free_slots(url, MAX_SESSIONS, timeout_s=IDLE_S + 10)
    assert waited < IDLE_S + 3, waited


def test_a_client_arriving_while_dead_clients_hold_every_slot_gets_a_session(url):
    """Every slot held by a client that went silent: a new client was refused at once (CAPACITY_REACHED, then a
    closed socket), losing its episode; now it waits until the idle timeout frees a slot, then plays."""
    _wait_for_free_slots(url, MAX_SESSIONS)
    with ExitStack() as stack:
        dead = [stack.enter_context(_ws(url)) for _ in range(MAX_SESSIONS)]
        for ws in dead:
            assert _ask(ws, json.dumps({"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
        start = time.monotonic()
        with _ws(url) as ws:
            _episode_goes_on(ws)
        assert time.monotonic() - start < IDLE_S + 3


def test_a_client_is_refused_when_no_slot_frees_within_the_wait(url):
    """Live sessions (each sending more often than the idle timeout) hold every slot: a new client is refused with
    CAPACITY_REACHED once `capacity_wait_s` is past, not kept waiting for ever."""
    _wait_for_free_slots(url, MAX_SESSIONS)
    stop = threading.Event()
    with ExitStack() as stack:
        live = [stack.enter_context(_ws(url)) for _ in range(MAX_SESSIONS)]

        def keep_busy() -> None:
            while not stop.wait(0.3):
                for ws in live:
                    _ask(ws, json.dumps({"type": "state"}))

        busy = threading.Thread(target=keep_busy, daemon=True)
        busy.start()
        try:
            start = time.monotonic()
            with _ws(url) as ws:
                reply = json.loads(ws.recv(timeout=CAPACITY_WAIT_S + 10))
            assert reply["data"]["code"] == "CAPACITY_REACHED", reply
            assert CAPACITY_WAIT_S <= time.monotonic() - start < CAPACITY_WAIT_S + 3
        finally:
            stop.set()
            busy.join(timeout=10)


@pytest.mark.parametrize("headers", [{"Content-Type": "text/plain"}, {}], ids=["text/plain", "no content type"])
def test_post_without_json_content_type_is_refused_and_creates_nothing(url, headers):
    with httpx.Client(timeout=10) as http:
        for _ in range(MAX_SESSIONS):
            resp = http.post(f"{url}/mcp", content=json.dumps(CREATE), headers=headers)
            assert resp.status_code == 415 and "application/json" in resp.json()["detail"]
    assert _wait_for_free_slots(url, MAX_SESSIONS, timeout_s=0) < 1  # no slot was taken


def test_browser_requests_from_another_origin_are_refused(url):
    from websockets.exceptions import InvalidStatus

    with httpx.Client(timeout=10) as http:
        resp = http.post(f"{url}/mcp", json=CREATE, headers={"Origin": "https://evil.example"})
        assert resp.status_code == 403 and "--allow-origin https://evil.example" in resp.json()["detail"]
        assert http.get(f"{url}/health", headers={"Origin": "null"}).status_code == 403
        # localhost pages and the origin allowed by --allow-origin are served
        assert http.get(f"{url}/health", headers={"Origin": "http://localhost:3000"}).status_code == 200
        resp = http.get(f"{url}/health", headers={"Origin": ALLOWED})
        assert resp.status_code == 200 and resp.headers["access-control-allow-origin"] == ALLOWED
    with pytest.raises(InvalidStatus) as err:
        _ws(url, origin="https://evil.example")
    assert err.value.response.status_code == 403
    with _ws(url, origin="http://127.0.0.1:8000") as ws:
        _episode_goes_on(ws)


def test_idle_websocket_is_closed_and_its_slot_freed(url):
    from websockets.exceptions import ConnectionClosed

    with ExitStack() as stack:
        idle = [stack.enter_context(_ws(url)) for _ in range(MAX_SESSIONS)]
        for ws in idle:
            assert _ask(ws, json.dumps({"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
        time.sleep(IDLE_S + 0.5)
        for ws in idle:
            reply = json.loads(ws.recv(timeout=5))
            assert reply["data"]["code"] == "IDLE_TIMEOUT" and "open a new one" in reply["data"]["message"]
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=5)
        # the sockets are still open on this side, but their slots are free
        assert _wait_for_free_slots(url, MAX_SESSIONS, timeout_s=0) < 1


def test_a_busy_session_is_not_idle(url):
    """Messages more often than the timeout keep a session open well past it."""
    with _ws(url) as ws:
        _ask(ws, json.dumps({"type": "reset", "data": {"seed": 0}}))
        for _ in range(int(3 * IDLE_S / 0.3)):
            time.sleep(0.3)
            assert _ask(ws, json.dumps({"type": "state"}))["type"] == "state"


def test_http_step_without_a_session_is_a_4xx_that_says_what_to_do(url):
    with httpx.Client(timeout=10) as http:
        resp = http.post(f"{url}/step", json={"action": {"text": "hello"}})
        assert resp.status_code == 409, resp.text
        detail = resp.json()["detail"]
        assert "/ws" in detail and "RemoteEnv" in detail
        assert http.post(f"{url}/step", json={"action": {"txt": "hello"}}).status_code == 422


@pytest.mark.parametrize("body", ['{"seed": 1e400}', '{"seed": ' + "9" * 5000 + "}", '{"seed": -1}',
                                  '{"seed": 18446744073709551616}', '{"seed": Infinity}', "[1]", '"x \\ud800"'])
def test_http_reset_with_out_of_range_numbers_is_422(url, body):
    with httpx.Client(timeout=10) as http:
        resp = http.post(f"{url}/reset", content=body, headers=JSON)
        assert resp.status_code == 422, resp.text
        assert len(resp.content) < 1000
        assert http.post(f"{url}/reset", json={"seed": 2**64 - 1}).status_code == 200


def test_large_body_is_413_and_not_echoed(url):
    with httpx.Client(timeout=30) as http:
        body = b'{"action": {"text": "' + b"x" * 20_000_000 + b'"}}'
        resp = http.post(f"{url}/step", content=body, headers=JSON)
        assert resp.status_code == 413 and len(resp.content) < 200 and str(MAX_BODY) in resp.text
        # a body sent in chunks, without a Content-Length, is counted as it comes
        chunks = (b"x" * 65536 for _ in range(64))
        resp = http.post(f"{url}/reset", content=chunks, headers=JSON)
        assert resp.status_code == 413 and len(resp.content) < 200
        # under the limit, a 422 quotes a prefix only
        resp = http.post(f"{url}/step", json={"action": {"text": "x" * 200_000}})
        assert resp.status_code == 422 and len(resp.content) < 1000


def test_step_info_carries_only_what_the_step_added(url):
    """Over the wire a step's info holds the step's new messages (not the system prompt again): per-step bytes stay
    flat over a 20-turn episode, while in process the info grows with every turn. `"transcript": true` on a step
    returns the whole info, equal to the in-process one."""
    from trace_envs.serving.remote import apply_info_delta

    env = gym.make(ENV)
    _, local_info = env.reset(seed=5)
    turns = 20
    local, sizes = [], []
    with _ws(url) as ws:
        reply = _ask(ws, json.dumps({"type": "reset", "data": {"seed": 5}}))
        info = reply["data"]["observation"]["info"]
        assert info == local_info  # reset sends the whole info
        for turn in range(turns):
            text = f"Could you tell me more, please? ({turn})"
            local.append(env.step(text)[4])
            frame = ws.send(json.dumps({"type": "step", "data": {"text": text}})) or ws.recv(timeout=10)
            sizes.append(len(frame))
            delta = json.loads(frame)["data"]["observation"]["info"]
            assert "messages" not in delta and "system_prompt" not in delta
            assert [m["content"] for m in delta["new_messages"]][0] == text
            info = apply_info_delta(info, delta)
            assert info == local[-1]
            if local[-1].get("reward_breakdown") is not None:
                break
        full = _ask(ws, json.dumps({"type": "step", "data": {"text": "one more thing", "transcript": True}}))
        assert full["data"]["observation"]["info"]["messages"] == env.step("one more thing")[4]["messages"]
    env.close()
    in_process = [len(json.dumps(i)) for i in local]
    assert len(sizes) >= 10
    assert max(sizes) < 2 * min(sizes), sizes  # flat: about 415 bytes a step on the first env (in process: 3.3-6.4 KB)
    assert in_process[-1] > in_process[0] + 150 * (len(in_process) - 1)  # in process, the info grows every turn
    assert sum(sizes) * 5 < sum(in_process)


def test_mcp_replies_do_not_echo_a_long_session_id(url):
    """OpenEnv answers an unknown session id with "Unknown session_id: <the id>", whatever its length."""
    long_id = "z" * 100_000
    with httpx.Client(timeout=10) as http:
        resp = http.post(f"{url}/mcp", json={**CREATE, "method": "tools/list", "params": {"session_id": long_id}})
        assert resp.status_code == 422 and len(resp.content) < 500
    with _ws(url) as ws:
        frame = {"type": "mcp", "data": {**CREATE, "method": "openenv/session/close", "params": {"session_id": long_id}}}
        reply = _ask(ws, json.dumps(frame))
        assert reply["type"] == "mcp" and "Unknown session_id: zzz" in json.dumps(reply) and len(json.dumps(reply)) < 500
        _episode_goes_on(ws)
