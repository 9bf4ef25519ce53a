"""Source formats as plugins: the registry's contract, a user's own format (examples/custom_format.py), tau2-bench
results as a bare list, special files in folders, and streaming loads."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref
from collections import Counter
from pathlib import Path

import pytest

from trace_envs.trajectories import formats
from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.formats import FormatError, SourceFormat, register_format, unregister_format
from trace_envs.trajectories.loaders import iter_runs, load_runs, summarize

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
TAU2 = DATA / "tau2-bench" / "results"
needs_data = pytest.mark.skipif(not TAU2.exists(), reason="real data not found beside the repo (../shared/data)")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


# --------------------------------------------------------------------------------------------------------------------
# the registry


def test_builtin_formats_in_sniffing_order():
    assert list(formats.all_formats()) == [
        "tau-bench", "tau2-bench", "tau2-bench-list", "openai-jsonl", "toolsandbox", "toolsandbox-scenario"]


@pytest.mark.parametrize(
    "fmt, message",
    [
        (SourceFormat("tau-bench", "x", sniff=bool, read=list), "format 'tau-bench' is already registered; pick another name"),
        (SourceFormat("My Format", "x", sniff=bool, read=list),
         "format name must be 2-40 characters of lower-case letters, digits, '_', '.', '-', got 'My Format'"),
        (SourceFormat("half", "x", sniff=bool), "format 'half': sniff and read come together: got only sniff"),
        (SourceFormat("blind", "x"), "format 'blind': it needs at least one of sniff, sniff_line, sniff_folder"),
        (SourceFormat("mute", " ", sniff=bool, read=list),
         "format 'mute': description (a phrase for the supported-formats line) is missing"),
        (SourceFormat("odd", "x", sniff="yes", read=list), "format 'odd': sniff must be callable, got str"),
    ],
)
def test_register_format_errors_are_exact(fmt, message):
    with pytest.raises(FormatError) as info:
        register_format(fmt)
    assert str(info.value) == message
    assert list(formats.all_formats())[:1] == ["tau-bench"]


def test_register_format_takes_a_source_format():
    with pytest.raises(FormatError, match="^register_format takes a SourceFormat, got dict$"):
        register_format({"name": "x"})
    with pytest.raises(FormatError, match="^unknown format 'nope'; registered formats: tau-bench, tau2-bench, "):
        formats.get_format("nope")


@pytest.fixture()
def custom_format():
    sys.path.insert(0, str(ROOT / "examples"))
    import custom_format as module  # noqa: F401  (registers "agent-log")

    yield module
    unregister_format("agent-log")
    sys.modules.pop("custom_format", None)
    sys.path.remove(str(ROOT / "examples"))


def _agent_log(path: Path) -> Path:
    path.write_text(json.dumps({"agent_log": 1, "episodes": [
        {"id": "refund-17", "passed": False, "steps": [
            {"user": "I want a refund for order 1042"},
            {"tool": "get_order", "args": {"order_id": 1042}, "output": {"status": "delivered"}},
            {"tool": "refund_order", "args": {"order_id": 1042}, "output": {"refunded": True}},
            {"agent": "Your refund is on its way."}]},
        {"id": "refund-18", "passed": True, "steps": [
            {"user": "Refund order 7?"},
            {"tool": "get_order", "args": {"order_id": 7}, "output": {"status": "pending"}},
            {"agent": "Order 7 has not shipped yet; I can cancel it instead."}]},
    ]}))
    return path


def test_custom_format_loads_a_file_by_its_content(custom_format, tmp_path):
    path = _agent_log(tmp_path / "whatever-name.log.json")
    res = load_runs([tmp_path])
    assert [(r.source, r.task_id, r.success, r.trial) for r in res.runs] == [
        ("agent-log", "refund-17", False, 0), ("agent-log", "refund-18", True, 0)]
    assert [c.name for c in res.runs[0].agent_calls] == ["get_order", "refund_order"]
    assert res.runs[0].agent_calls[0].result == '{"status": "delivered"}'
    assert res.runs[0].meta["domain"] == "refunds"
    assert res.files == [str(path)]
    assert "agent logs (a JSON object" in formats.supported_formats()


def test_custom_format_errors_are_located(custom_format, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"agent_log": 1, "episodes": [{"id": "e1", "passed": "yes"}]}))
    with pytest.raises(TrajectoryFormatError) as info:
        load_runs([path])
    assert str(info.value) == f'{path}: episodes[0] (episode e1): expected "passed" to be true or false'


def test_unknown_file_still_gets_one_clear_error(tmp_path):
    path = tmp_path / "shape.json"
    path.write_text('{"hello": "world"}')
    with pytest.raises(TrajectoryFormatError) as info:
        load_runs([path])
    assert str(info.value).startswith(f"{path}: unknown trajectory format: got a JSON object with keys: hello; "
                                      "supported formats: tau-bench trajectories")
    assert "ToolSandbox run folders" in str(info.value)


# --------------------------------------------------------------------------------------------------------------------
# tau2-bench as a bare list of simulations


def _profile(runs) -> tuple[dict, Counter, set]:
    s = summarize(runs)
    tools = Counter(c.name for r in runs for c in r.agent_calls)
    return {k: s[k] for k in ("runs", "passed", "failed", "tasks", "mixed_tasks")}, tools, {r.meta["domain"] for r in runs}


@needs_data
@pytest.mark.parametrize("name", ["gpt-4.1_airline.json", "ft-gpt-4.1_retail.json"])
def test_tau2_bare_list_loads_with_the_counts_of_its_wrapped_form(name, tmp_path):
    wrapped = TAU2 / name
    bare = tmp_path / "submission.json"
    bare.write_text(json.dumps(json.loads(wrapped.read_text())["simulations"]))
    w, b = load_runs([wrapped]).runs, load_runs([bare]).runs
    assert _profile(b) == _profile(w)
    assert {r.source for r in b} == {"tau2-bench"}
    assert [r.reward for r in b] == [r.reward for r in w]
    assert [len(r.user_calls) for r in b] == [len(r.user_calls) for r in w]
    counts, tools, _ = _profile(b)
    expected = {"gpt-4.1_airline.json": (20, 10), "ft-gpt-4.1_retail.json": (40, 34)}[name]
    assert (counts["runs"], counts["passed"]) == expected
    assert ("get_reservation_details" in tools) == (name == "gpt-4.1_airline.json")
    assert ("get_order_details" in tools) == (name == "ft-gpt-4.1_retail.json")


def test_tau2_bare_list_bad_simulation_is_located(tmp_path):
    path = tmp_path / "sims.json"
    path.write_text(json.dumps([{"task_id": "3", "reward_info": {"reward": "high"}, "messages": [
        {"role": "user", "content": "hi"}]}]))
    with pytest.raises(TrajectoryFormatError) as info:
        load_runs([path])
    assert str(info.value) == f'{path}: run index 0 (task 3): expected "reward_info.reward" to be a number, got a string'


# --------------------------------------------------------------------------------------------------------------------
# special files and large inputs


def _jsonl(path: Path, n: int, domain: bool = True) -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"task_id": i % 7, "trial": i // 7, "reward": i % 2, **({"domain": "shop"} if domain else {}),
                                "messages": [{"role": "user", "content": "order?"}, {"role": "assistant", "content": None,
                                             "tool_calls": [{"id": "c", "function": {"name": "get_order", "arguments": "{}"}}]},
                                             {"role": "tool", "tool_call_id": "c", "content": "{}"}]}) + "\n")
    return path


def test_fifo_in_a_folder_is_skipped_unopened(tmp_path):
    good = _jsonl(tmp_path / "good.jsonl", 3)
    os.mkfifo(tmp_path / "x.json")
    res = load_runs([tmp_path])  # what `mine` calls: it must return, not block on the FIFO
    assert len(res.runs) == 3 and res.files == [str(good)]
    assert res.warnings == [f"{tmp_path / 'x.json'}: skipped, a FIFO (named pipe), not a regular file; it was not opened"]
    proc = subprocess.run([sys.executable, "-m", "trace_envs.cli", "inspect", str(tmp_path)], capture_output=True,
                          text=True, env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "runs: 3  passed: 1  failed: 2" in proc.stdout
    assert f"warning: {tmp_path / 'x.json'}: skipped, a FIFO (named pipe)" in proc.stderr
    named = subprocess.run([sys.executable, "-m", "trace_envs.cli", "inspect", str(tmp_path / "x.json")],
                           capture_output=True, text=True, env=_env(), timeout=120)
    assert named.returncode == 2
    assert named.stderr.strip() == f"error: {tmp_path / 'x.json'}: not a regular file or directory (a FIFO (named pipe))"


def test_jsonl_streams_without_holding_runs(tmp_path):
    path = _jsonl(tmp_path / "many.jsonl", 300)
    runs = iter_runs([path])
    assert iter(runs) is runs  # a generator, not a list
    alive = []
    for i, run in enumerate(runs):
        alive.append(weakref.ref(run))
        del run
        if i == 150:
            gc.collect()
            assert sum(r() is not None for r in alive) <= 2  # earlier runs were let go
    assert len(alive) == 300


def test_domain_guess_reads_the_first_runs_of_a_large_file(tmp_path, monkeypatch):
    from trace_envs.trajectories import loaders

    monkeypatch.setattr(loaders, "DOMAIN_GUESS_RUNS", 10)
    path = _jsonl(tmp_path / "nodomain.jsonl", 25, domain=False)
    runs = list(iter_runs([path]))
    assert len(runs) == 25 and {r.meta["domain"] for r in runs} == {"retail"}  # get_order: a retail word


def test_jsonl_no_format_claims_is_one_clear_error(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "start", "t": 1}\n{"event": "stop", "t": 2}\n')
    with pytest.raises(TrajectoryFormatError) as info:
        load_runs([path])
    assert str(info.value).startswith(f"{path}: unknown trajectory format: got JSON lines (first keys: event, t); "
                                      "supported formats: tau-bench trajectories")
    assert load_runs([tmp_path]).ignored[0].startswith(f"{path}: unknown trajectory format")  # found by a walk
