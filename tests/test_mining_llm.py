"""The LLM proposer and labeler end to end against recorded replies (httpx MockTransport; no network)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from trace_envs.cli import mine_cmd
from trace_envs.datasets.planted import generate_planted, write_jsonl
from trace_envs.mining.llm import LLMClient, LLMConfigError, check_llm_configured, extract_json, http_module
from trace_envs.mining.pipeline import MineOptions, mine

httpx = http_module()

VALID = {
    "candidates": [
        {"name": "llm_confirm_cancel", "description": "Ask the user to confirm before cancelling an order.",
         "family": "confirmation_before_write",
         "roles": {"write": "cancel_order", "read": "get_order_details", "key": "order_id"},
         "evidence": "the failed run cancels right after the lookup"},
        {"name": "llm_sum_order_totals", "description": "Add up the order totals the user asks about correctly.",
         "family": "aggregation_arithmetic", "roles": {"read": "get_order_details", "key": "order_id"}},
    ]
}
NEVER_VALID = {"candidates": [{"name": "llm_launch", "description": "Launch the rockets before any refund.",
                               "family": "policy_refusal", "roles": {"write": "launch_rockets", "key": "order_id"}}]}


class Recorder:
    """Recorded replies: proposals in order (invalid, then valid; then one that never validates), labels by parity."""

    def __init__(self, provider: str = "openai", fail_first: int = 0) -> None:
        self.provider = provider
        self.requests = 0
        self.proposals = ["Sure! Here are some capabilities: confirmation matters.", json.dumps(VALID),
                          "```json\n" + json.dumps(NEVER_VALID) + "\n```", json.dumps(NEVER_VALID)]
        self.prompts: list[str] = []
        self.fail_first = fail_first

    def __call__(self, request):
        self.requests += 1
        if self.fail_first > 0:
            self.fail_first -= 1
            # A short server-directed delay keeps the SDK's retries quick.
            return httpx.Response(429 if self.fail_first % 2 == 0 else 503, json={"error": {"message": "slow down"}},
                                  headers={"retry-after-ms": "10"})
        body = json.loads(request.content)
        prompt = body["messages"][0]["content"]
        self.prompts.append(prompt)
        if prompt.startswith("Decide whether"):
            text = json.dumps({"label": "LACKING" if len(prompt) % 2 else "PRESENT", "reason": "recorded"})
        else:
            text = self.proposals.pop(0) if self.proposals else json.dumps(NEVER_VALID)
        if self.provider == "anthropic":
            return httpx.Response(200, json={
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-0",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20}})
        return httpx.Response(200, json={
            "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})


def client(rec: Recorder, tmp_path, spec="openai:gpt-4o-mini"):
    http = httpx.Client(transport=httpx.MockTransport(rec))
    return LLMClient(spec, api_key="test-key", http_client=http, cache_dir=tmp_path / "cache")


OPTS = MineOptions(concurrency=1, max_pairs=8, pairs_per_prompt=4, llm_label_runs=40)


@pytest.fixture(scope="module")
def runs():
    return generate_planted(400, seed=7)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_llm_mining_end_to_end_with_retry_drop_and_cache(runs, tmp_path, provider):
    spec = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-sonnet-4-0"
    rec = Recorder(provider)
    res = mine(runs, options=OPTS, llm=client(rec, tmp_path, spec))
    names = [c.name for c in res.candidates]
    # the invalid first reply was retried with the error appended, and its candidates came through
    assert "llm_confirm_cancel" in names and "llm_sum_order_totals" in names
    assert any("Your previous reply was invalid" in p for p in rec.prompts)
    # the reply that never validated was dropped with a warning naming the problem
    assert "llm_launch" not in names
    assert any("launch_rockets" in w and "dropped" in w for w in res.warnings)
    cand = {c.name: c for c in res.candidates}
    assert cand["llm_confirm_cancel"].labeler == "family"  # a family whose own labeler handles it
    assert cand["llm_sum_order_totals"].labeler == "llm"  # roles too thin: the LLM labels it
    j = names.index("llm_sum_order_totals")
    assert (res.matrix.labels[:40, j] != 0).any()
    assert res.usage["requests"] == rec.requests and res.usage["input_tokens"] == 100 * rec.requests
    assert res.usage["cost_usd"] > 0
    assert res.mode.startswith(f"llm:{provider}")
    # rerun: every reply comes from the cache, zero requests
    rec2 = Recorder(provider)
    res2 = mine(runs, options=OPTS, llm=client(rec2, tmp_path, spec))
    assert rec2.requests == 0
    assert res2.usage["requests"] == 0 and res2.usage["cache_hits"] > 0
    assert [c.name for c in res2.capabilities] == [c.name for c in res.capabilities]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdk_retries_429_and_5xx(tmp_path, provider):
    rec = Recorder(provider, fail_first=3)
    http = httpx.Client(transport=httpx.MockTransport(rec))
    spec = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-sonnet-4-0"
    c = LLMClient(spec, api_key="k", http_client=http, cache_dir=tmp_path)
    text = c.complete("Decide whether x")
    assert json.loads(text)["label"] in ("PRESENT", "LACKING")
    assert c.usage.retries == 3 and c.usage.requests == rec.requests == 4


def test_bounded_retries_then_reported(runs, tmp_path):
    rec = Recorder(fail_first=1000)
    c = LLMClient("openai:gpt-4o-mini", api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(rec)),
                  cache_dir=tmp_path, max_retries=2)
    res = mine(runs, options=OPTS, llm=c)  # mining continues with the offline candidates
    assert rec.requests == 3 * 2  # two proposal batches, 1 + 2 retries each
    assert len(res.failures) == 2 and all("429" in f or "503" in f or "Error" in f for f in res.failures)
    assert res.capabilities


def test_fail_fast_without_key(monkeypatch, tmp_path):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        check_llm_configured("openai:gpt-4o-mini")
    with pytest.raises(LLMConfigError, match="ANTHROPIC_API_KEY"):
        check_llm_configured("anthropic:claude-sonnet-4-0")
    with pytest.raises(LLMConfigError, match="PROVIDER:MODEL"):
        check_llm_configured("gpt-4o")
    assert check_llm_configured("vllm:qwen", base_url="http://localhost:8000/v1") == ("vllm", "qwen")
    a = typer.Typer(add_completion=False)
    a.callback()(lambda: None)
    mine_cmd.register(a)
    # the key is checked before any work: a missing run file is not even looked at
    res = CliRunner().invoke(a, ["mine", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o"), "--llm",
                                 "openai:gpt-4o-mini"])
    assert res.exit_code == 2 and "OPENAI_API_KEY" in res.output and "missing" not in res.output


def test_extract_json_never_executes():
    assert extract_json('noise ```json\n{"a": 1}\n``` tail') == {"a": 1}
    with pytest.raises(ValueError):
        extract_json("__import__('os').system('echo hi')")


def test_cli_offline_default_without_llm(tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    path = write_jsonl(generate_planted(300, seed=1), tmp_path / "r.jsonl")
    a = typer.Typer(add_completion=False)
    a.callback()(lambda: None)
    mine_cmd.register(a)
    # the default miner is under test, not the envs: no publish check
    res = CliRunner().invoke(a, ["mine", str(path), "-o", str(tmp_path / "o"), "-q", "--no-publish-check"])
    assert res.exit_code == 0, res.output
    assert "with offline" in res.output
