"""Loaders for tau-bench, tau2-bench and OpenAI-messages JSONL, against the real data and hand-made bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.checks.trace import ActionTrace
from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.loaders import LoadResult, load_file, load_runs, summarize
from trace_envs.trajectories.models import Run

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2-bench" / "results"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


def _jsonl_run(task_id="t1", reward=1.0, **extra) -> dict:
    run = {
        "task_id": task_id,
        "reward": reward,
        "messages": [
            {"role": "system", "content": "policy text"},
            {"role": "user", "content": "cancel my order 42"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": {"id": 42}}},
                    {"id": "c2", "type": "function", "function": {"name": "cancel_order", "arguments": '{"id": 42}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "get_order", "content": '{"id": 42, "status": "open"}'},
            {"role": "tool", "tool_call_id": "c2", "name": "cancel_order", "content": '{"id": 42, "status": "x"}'},
            {"role": "assistant", "content": "Done."},
        ],
    }
    run.update(extra)
    return run


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


# ------------------------------------------------------------------------------------------------ real data


@pytest.fixture(scope="module")
def tau_runs() -> list[Run]:
    return load_runs([TAU]).runs


@needs_data
def test_tau_bench_counts(tau_runs):
    assert len(tau_runs) == 200
    s = summarize(tau_runs)
    assert (s["passed"], s["failed"], s["tasks"], s["mixed_tasks"]) == (84, 116, 50, 26)
    calls = sum(1 for r in tau_runs for c in r.agent_calls if c.name == "get_reservation_details")
    assert calls == 377
    assert len({r.run_id for r in tau_runs}) == 200
    assert tau_runs[0].run_id == "gpt-4o-airline/0/0"
    assert all(r.source == "tau-bench" and r.meta["domain"] == "airline" for r in tau_runs)


@needs_data
def test_tau_bench_content(tau_runs):
    run = tau_runs[0]
    assert run.policy and run.policy.startswith("# Airline Agent Policy")
    assert run.instruction and "mia_li_3668" in run.instruction
    assert run.ground_truth and run.ground_truth[0].name == "book_reservation"
    assert run.ground_truth[0].arguments["user_id"] == "mia_li_3668"
    assert any(g.name == "book_reservation" for r in tau_runs for g in r.ground_truth or [])
    for r in tau_runs:
        for c in r.tool_calls:
            assert isinstance(c.arguments, dict)
            assert r.messages[c.message_index]["role"] == "assistant"
            assert c.result is not None  # every call in this file got its reply
    first = run.tool_calls[0]
    assert first.name == "get_user_details" and first.arguments == {"user_id": "mia_li_3668"}
    assert json.loads(first.result)["membership"] == "gold"
    # the checks layer builds traces from these runs
    trace = ActionTrace.from_run(run)
    assert [s.name for s in trace.calls][:1] == ["get_user_details"]


@needs_data
def test_tau_bench_reused_call_ids_join_in_order(tau_runs):
    """Run 0 reuses call ids for different tools: each reply must join the call just before it."""
    run = tau_runs[0]
    ids = [c.id for c in run.tool_calls]
    assert len(ids) != len(set(ids))
    by_index = {i: m for i, m in enumerate(run.messages)}
    for c in run.tool_calls:
        # the reply is the next tool message after the call's assistant message carrying its id and name
        reply = next(
            m for i, m in by_index.items() if i > c.message_index and m["role"] == "tool" and m["tool_call_id"] == c.id
        )
        assert reply["name"] == c.name
        assert reply["content"] == c.result


@needs_data
@pytest.mark.parametrize(
    "name,runs,passed",
    [
        ("ft-gpt-4.1_airline", 20, 13),
        ("ft-gpt-4.1_retail", 40, 34),
        ("gpt-4.1_airline", 20, 10),
        ("gpt-4.1_retail", 40, 34),
    ],
)
def test_tau2_counts(name, runs, passed):
    result = load_file(TAU2 / f"{name}.json")
    assert len(result.runs) == runs
    assert sum(r.success for r in result.runs) == passed
    run = result.runs[0]
    assert run.source == "tau2-bench"
    assert run.meta["domain"] == name.split("_")[1]
    assert run.meta["agent_model"].endswith("gpt-4.1") or "gpt-4.1" in run.meta["agent_model"]
    assert run.policy and "agent policy" in run.policy.lower()


@needs_data
def test_tau2_messages_normalised_and_ground_truth():
    runs = load_file(TAU2 / "gpt-4.1_airline.json").runs
    allowed = {"role", "content", "tool_calls", "tool_call_id", "name"}
    n_calls = 0
    for r in runs:
        assert r.ground_truth is not None
        for m in r.messages:
            assert set(m) <= allowed
            for tc in m.get("tool_calls") or []:
                assert tc["type"] == "function" and isinstance(tc["function"]["arguments"], str)
                json.loads(tc["function"]["arguments"])
            if m["role"] == "tool":
                assert m["tool_call_id"] and m["name"]
        for c in r.tool_calls:
            n_calls += 1
            assert isinstance(c.arguments, dict) and c.requestor == "agent" and c.result is not None
    assert n_calls == 148
    task2 = next(r for r in runs if r.task_id == "2")
    assert [g.name for g in task2.ground_truth][:2] == ["get_user_details", "get_reservation_details"]
    assert any(g.name == "send_certificate" for g in task2.ground_truth)
    assert task2.instruction and "noah_muller_9847" in task2.instruction


def test_tau2_user_requestor_calls(tmp_path):
    doc = {
        "timestamp": "x",
        "info": {
            "environment_info": {"domain_name": "telecom", "policy": "P", "tool_defs": None},
            "agent_info": {"llm": "m"},
        },
        "tasks": [
            {
                "id": "7",
                "evaluation_criteria": {"actions": [{"name": "toggle_data", "arguments": {}, "requestor": "user"}]},
            }
        ],
        "simulations": [
            {
                "task_id": "7",
                "trial": 0,
                "seed": 1,
                "termination_reason": "user_stop",
                "reward_info": {"reward": 1.0},
                "messages": [
                    {"role": "assistant", "content": "Hi", "tool_calls": None, "turn_idx": 0},
                    {
                        "role": "user",
                        "content": None,
                        "turn_idx": 1,
                        "tool_calls": [{"id": "u1", "name": "toggle_data", "arguments": {}, "requestor": "user"}],
                    },
                    {"role": "tool", "id": "u1", "content": "ok", "requestor": "user", "error": False},
                    {
                        "role": "assistant",
                        "content": None,
                        "raw_data": {"x": 1},
                        "tool_calls": [
                            {"id": "a1", "name": "get_line", "arguments": {"n": 1}, "requestor": "assistant"}
                        ],
                    },
                    {"role": "tool", "id": "a1", "content": "Error: no line", "requestor": "assistant", "error": True},
                ],
            }
        ],
    }
    path = tmp_path / "sim.json"
    path.write_text(json.dumps(doc))
    (run,) = load_file(path).runs
    assert [(c.name, c.requestor) for c in run.tool_calls] == [("toggle_data", "user"), ("get_line", "agent")]
    assert [c.name for c in run.agent_calls] == ["get_line"]
    assert run.agent_calls[0].error is True and run.tool_calls[0].result == "ok"
    assert run.ground_truth[0].requestor == "user"
    assert run.meta == {"domain": "telecom", "agent_model": "m", "termination_reason": "user_stop", "seed": 1}
    assert "raw_data" not in run.messages[3] and "turn_idx" not in run.messages[0]
    assert run.success and run.run_id == "sim/7/0"


# ------------------------------------------------------------------------------------------------ JSONL


def test_jsonl_basic(tmp_path):
    path = _write_jsonl(tmp_path / "logs.jsonl", [_jsonl_run(), _jsonl_run(success=False, reward=None, trial=1)])
    res = load_runs([path])
    assert [r.run_id for r in res.runs] == ["logs/t1/0", "logs/t1/1"]
    a, b = res.runs
    assert a.success and a.reward == 1.0 and not b.success and b.reward == 0.0
    assert [c.arguments for c in a.tool_calls] == [{"id": 42}, {"id": 42}]
    assert a.tool_calls[1].result == '{"id": 42, "status": "x"}'
    assert a.messages[2]["tool_calls"][0]["function"]["arguments"] == '{"id": 42}'
    assert a.policy == "policy text"


def test_jsonl_duplicate_run_ids_get_suffix(tmp_path):
    path = _write_jsonl(tmp_path / "d.jsonl", [_jsonl_run(), _jsonl_run()])
    assert [r.run_id for r in load_runs([path]).runs] == ["d/t1/0", "d/t1/0~2"]


def test_jsonl_skip_invalid(tmp_path):
    rows = [_jsonl_run("a"), '{"task_id": "b", "messages": [', _jsonl_run("c")]
    path = _write_jsonl(tmp_path / "x.jsonl", rows)
    with pytest.raises(TrajectoryFormatError, match=r"x\.jsonl: line 2 column \d+: invalid JSON"):
        load_runs([path])
    res = load_runs([path], skip_invalid=True)
    assert [r.task_id for r in res.runs] == ["a", "c"]
    assert len(res.skipped) == 1 and "line 2" in res.skipped[0]


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "name,content,pattern",
    [
        ("empty.json", b"", r"empty\.json: file is empty"),
        ("blank.jsonl", b"  \n\n", r"blank\.jsonl: file is empty"),
        ("bin.json", bytes(range(256)) * 4, r"bin\.json: not a text file"),
        ("latin.json", b'{"a": "caf\xe9"}', r"latin\.json: not a text file \(invalid UTF-8 at byte 10\)"),
        (
            "trunc.json",
            b'[{"task_id": 1, "traj": [{"role": "user", "cont',
            r"trunc\.json: line 1 column \d+: invalid JSON .*truncated",
        ),
        (
            "shape.json",
            b'{"foo": 1, "bar": 2}',
            r"shape\.json: unknown trajectory format: got a JSON object with keys: foo, bar; "
            r"supported formats: tau-bench",
        ),
        ("list.json", b"[1, 2]", r"list\.json: unknown trajectory format"),
        ("emptylist.json", b"[]", r"emptylist\.json: expected a list of runs, got an empty list"),
        (
            "notraj.json",
            b'[{"task_id": 7, "reward": 0, "traj": null}]',
            r'notraj\.json: run index 0 \(task 7\): expected "traj" to be a list of messages, got null',
        ),
        (
            "nomsg.json",
            b'[{"task_id": 7, "reward": 0, "traj": []}]',
            r"nomsg\.json: run index 0 \(task 7\): expected \"traj\" to hold at least one message",
        ),
        (
            "noreward.json",
            b'[{"task_id": 7, "traj": [{"role": "user", "content": "x"}]}]',
            r'run index 0 \(task 7\): expected "reward"',
        ),
        (
            "tau2bad.json",
            b'{"simulations": [{"task_id": "3", "messages": [], "reward_info": {"reward": 1}}]}',
            r"tau2bad\.json: run index 0 \(task 3\): expected \"messages\" to hold at least one message",
        ),
        (
            "badmsg.jsonl",
            b'{"task_id": 1, "reward": 1, "messages": [{"content": "x"}]}\n',
            r'badmsg\.jsonl: line 1: expected "messages\[0\]\.role" to be a string',
        ),
    ],
)
def test_bad_input_one_clear_error(tmp_path, name, content, pattern):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(TrajectoryFormatError, match=pattern) as info:
        load_runs([path])
    assert "\n" not in str(info.value)


def test_pydantic_error_names_field(tmp_path):
    path = _write_jsonl(tmp_path / "p.jsonl", [_jsonl_run(tools=[{"name": "x"}], meta={"k": 1})])
    load_runs([path])  # fine
    path = _write_jsonl(tmp_path / "q.jsonl", [_jsonl_run(reward=float("nan"))])
    load_runs([path])  # nan is a float; accepted
    doc = [{"task_id": 1, "reward": 1, "traj": [{"role": "user", "content": "x"}], "trial": "zero"}]
    (tmp_path / "r.json").write_text(json.dumps(doc))
    with pytest.raises(
        TrajectoryFormatError, match=r'r\.json: run index 0 \(task 1\): expected "trial" to be an integer'
    ):
        load_runs([tmp_path / "r.json"])


def test_validation_error_becomes_format_error_with_field_path():
    from trace_envs.trajectories import loaders

    rec = {
        "run_id": "f/1/0",
        "source": "x",
        "task_id": "1",
        "messages": [{"role": "user"}],
        "reward": 1.0,
        "success": True,
        "tool_calls": [{"id": "c", "name": "n", "arguments": ["not", "a", "dict"]}],
    }
    with pytest.raises(loaders._RunError) as info:
        loaders._validate_run(rec, "line 3")
    assert info.value.where == "line 3"
    assert 'invalid field "tool_calls.0.arguments"' in info.value.message


def test_skip_invalid_skips_whole_bad_file(tmp_path):
    (tmp_path / "empty.json").write_bytes(b"")
    good = _write_jsonl(tmp_path / "good.jsonl", [_jsonl_run()])
    with pytest.raises(TrajectoryFormatError):
        load_runs([tmp_path / "empty.json", good])
    res = load_runs([tmp_path / "empty.json", good], skip_invalid=True)
    assert len(res.runs) == 1 and len(res.skipped) == 1 and "empty.json" in res.skipped[0]


def test_missing_path_and_unmatched_glob(tmp_path):
    with pytest.raises(TrajectoryFormatError, match="no such file or directory"):
        load_runs([tmp_path / "nope.json"])
    with pytest.raises(TrajectoryFormatError, match="no files match"):
        load_runs([str(tmp_path / "*.nothing")])


# ------------------------------------------------------------------------------------------------ paths


@needs_data
def test_directory_and_glob(tmp_path):
    d = tmp_path / "mixed"
    (d / "sub").mkdir(parents=True)
    (d / "a-tau.json").symlink_to(TAU)
    (d / "sub" / "b-tau2.json").symlink_to(TAU2 / "gpt-4.1_airline.json")
    _write_jsonl(d / "c.jsonl", [_jsonl_run()])
    (d / "notes.txt").write_text("not read")
    (d / "tasks.json").write_text('[{"id": "1", "user_scenario": {}}]')
    res = load_runs([d])
    assert isinstance(res, LoadResult)
    assert len(res.runs) == 200 + 20 + 1
    assert sorted({r.source for r in res.runs}) == ["openai-jsonl", "tau-bench", "tau2-bench"]
    assert [Path(f).name for f in res.files] == ["a-tau.json", "c.jsonl", "b-tau2.json"]
    assert len(res.ignored) == 1 and "tasks.json" in res.ignored[0]
    globbed = load_runs([str(TAU2 / "*_retail.json")])
    assert len(globbed.runs) == 80 and len(globbed.files) == 2
    # the same file twice counts once
    assert len(load_runs([TAU, TAU]).runs) == 200


@needs_data
def test_explicit_unknown_file_is_an_error():
    with pytest.raises(TrajectoryFormatError, match="tasks.json: unknown trajectory format"):
        load_runs([DATA / "tau2-bench" / "domains" / "airline" / "tasks.json"])
