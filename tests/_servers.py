"""Start a local server for a test (`trace-envs serve`, `transformers serve`) and wait until it answers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from trace_envs.serving.health import wait_for_server


def start_server(cmd: list[str], port: int, log: Path, *, timeout_s: float = 120, **env: str) -> subprocess.Popen:
    """Run `cmd` (a server listening on 127.0.0.1:`port`) with its output in `log` and extra environment `env`; fail
    the test with the log's tail when it does not answer /health within `timeout_s`."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=out, env={**os.environ, **env})
    try:
        wait_for_server(f"http://127.0.0.1:{port}", timeout_s=timeout_s, process=proc)
    except (RuntimeError, TimeoutError):
        proc.kill()
        proc.wait()
        pytest.fail(f"{' '.join(cmd[:4])} did not come up:\n{log.read_text()[-3000:]}")
    return proc
