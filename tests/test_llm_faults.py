"""LLM endpoint faults against a real HTTP server on 127.0.0.1 that misbehaves on purpose: timeouts, 429 and 5xx
answers, truncated and non-JSON replies, a closed connection. The SDK retries transport faults itself (with backoff
and the server's Retry-After); our client re-asks only after a success reply it cannot read. Each is retried up to a
limit, then reported per proposal batch, and mining goes on with what succeeded."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from trace_envs.datasets.planted import generate_planted
from trace_envs.mining.llm import LLMClient, LLMRequestError
from trace_envs.mining.pipeline import MineOptions, mine

PROPOSAL = {
    "candidates": [
        {"name": "llm_confirm_refund", "description": "Ask the user to confirm before refunding an order.",
         "family": "confirmation_before_write",
         "roles": {"write": "refund_order", "read": "get_order_details", "key": "order_id"}}
    ]
}


def completion(text: str) -> bytes:
    return json.dumps({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }).encode()


class Faulty:
    """A script of behaviours, one per request; after it runs out, `after` for every request."""

    def __init__(self, script: list[str], after: str = "ok", reply: str = "fine"):
        self.script = list(script)
        self.after = after
        self.reply = reply
        self.seen: list[str] = []
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def next(self) -> str:
        with self.lock:
            behaviour = self.script.pop(0) if self.script else self.after
            self.seen.append(behaviour)
            self.arrivals.append(time.monotonic())
            return behaviour


def serve(faulty: Faulty):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            behaviour = faulty.next()
            if behaviour == "close":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if behaviour == "timeout":
                time.sleep(1.5)  # the client gives up after 0.5 s
                return
            status, body = {
                "429": (429, b'{"error": {"message": "rate limited"}}'),
                "429-retry-after": (429, b'{"error": {"message": "rate limited"}}'),
                "500": (500, b'{"error": {"message": "boom"}}'),
                "503": (503, b"service unavailable"),
                "nonjson": (200, b"<html>gateway says hi</html>"),
                "truncated": (200, completion(faulty.reply)[:40]),
                "ok": (200, completion(faulty.reply)),
            }[behaviour]
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if behaviour == "429-retry-after":
                self.send_header("Retry-After", "1")
            length = len(body) + (200 if behaviour == "truncated" else 0)  # promise more than is sent
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(body)
            if behaviour == "truncated":
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def endpoint():
    servers = []

    def start(faulty: Faulty) -> str:
        server = serve(faulty)
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def client(url: str, tmp_path, **kw) -> LLMClient:
    opts = {"max_retries": 3, "timeout_s": 0.5, **kw}
    return LLMClient("openai:gpt-4o-mini", base_url=url, api_key="k", cache_dir=tmp_path / "cache", **opts)


@pytest.mark.parametrize("fault", ["429", "500", "503", "timeout", "nonjson", "truncated", "close"])
def test_each_fault_is_retried_then_succeeds(fault, endpoint, tmp_path):
    faulty = Faulty([fault, fault])
    c = client(endpoint(faulty), tmp_path)
    assert c.complete("hello") == "fine"
    assert faulty.seen == [fault, fault, "ok"]
    assert c.usage.requests == 3 and c.usage.retries == 2
    assert (c.usage.input_tokens, c.usage.output_tokens) == (10, 5)  # from the one reply's usage field


def test_backoff_grows_and_retry_after_is_honoured(endpoint, tmp_path):
    """The SDK's exponential backoff (0.5 s, then 1 s, less up to 25% jitter) without a Retry-After header; the
    server's own delay (Retry-After: 1) when it sends one."""
    faulty = Faulty(["429", "429", "429-retry-after"])
    c = client(endpoint(faulty), tmp_path)
    assert c.complete("x") == "fine"
    gaps = [b - a for a, b in zip(faulty.arrivals, faulty.arrivals[1:])]
    assert 0.35 <= gaps[0] < 0.9 and 0.7 <= gaps[1] < 1.6, gaps
    assert gaps[2] >= 0.95, gaps


@pytest.mark.parametrize("fault", ["500", "nonjson"])
def test_a_fault_that_persists_is_reported_after_the_retry_limit(fault, endpoint, tmp_path):
    faulty = Faulty([], after=fault)
    c = client(endpoint(faulty), tmp_path, max_retries=2)
    with pytest.raises(LLMRequestError, match="500|Internal|boom|JSON|Expecting"):
        c.complete("x")
    assert len(faulty.seen) == 3 and c.usage.requests == 3


def test_mining_goes_on_with_what_succeeded(endpoint, tmp_path):
    """Two proposal batches: the first meets a fault on every try and is reported; the second succeeds after a
    transient one. Mining keeps the offline candidates, adds the LLM's, and labels with the checks."""
    faulty = Faulty(["close", "500", "timeout", "503", "429", "ok"], reply=json.dumps(PROPOSAL))
    c = client(endpoint(faulty), tmp_path, max_retries=3)
    opts = MineOptions(concurrency=1, max_pairs=8, pairs_per_prompt=4)
    result = mine(generate_planted(400, seed=3), options=opts, llm=c)
    assert [f for f in result.failures if f.startswith("proposal batch 0")]
    assert not [f for f in result.failures if f.startswith("proposal batch 1")]
    assert "llm_confirm_refund" in [cand.name for cand in result.candidates]
    assert result.capabilities
    assert faulty.seen[:6] == ["close", "500", "timeout", "503", "429", "ok"]
