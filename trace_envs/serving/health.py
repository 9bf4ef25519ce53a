"""Starting a local HTTP server (`trace-envs serve`, `transformers serve`, vLLM ...): a free port to give it, and
waiting until it answers on its `/health` route."""

from __future__ import annotations

import socket
import time
import urllib.request
from typing import Any


def wait_for_server(base_url: str, timeout_s: float = 60.0, process: Any = None) -> float:
    """Poll `base_url`/health until the server answers; returns the seconds waited.

    `timeout_s`: give up after this long (TimeoutError). `process`: the server's `subprocess.Popen`, if this process
    started it: its early exit raises RuntimeError at once instead of waiting out the timeout."""
    start = time.monotonic()
    while True:
        try:
            with urllib.request.urlopen(f"{base_url.rstrip('/')}/health", timeout=1):
                return time.monotonic() - start
        except OSError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the server at {base_url} exited with status {process.returncode}") from None
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"no answer from {base_url}/health within {timeout_s:.0f} s") from None
            time.sleep(0.05)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now (the OS picks it), to start a server on."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
