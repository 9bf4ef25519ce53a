"""Property tests of the trajectory loaders on randomly mutated real files.

Seeds: the first 3 runs of the tau-bench gpt-4o airline file, the first 2 simulations of one tau2-bench results file
(with their tasks, and as a bare list), the tau-bench runs rewritten as OpenAI-messages JSONL, and the three files of
a ToolSandbox run folder (tests/data/toolsandbox). Mutations: deleting or retyping keys
anywhere in the parsed JSON, then flipping, inserting or deleting bytes, or truncating the text. Loading a mutated file
either gives runs (usable downstream: traces, profile, summary) or the documented `TrajectoryFormatError`, never
another exception; with `skip_invalid=True` it never raises at all.
"""

from __future__ import annotations

import copy
import json
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

from trace_envs.checks.trace import ActionTrace
from trace_envs.trajectories import LoadResult, TrajectoryFormatError, build_profile, load_runs, summarize

from _reliability import TAU2_FILE, TAU_BENCH_FILE, examples, user_stack

pytestmark = pytest.mark.skipif(not TAU_BENCH_FILE.exists() or not TAU2_FILE.exists(), reason="real data not found")


@lru_cache(maxsize=None)
def _seed_text(kind: str) -> str:
    if kind == "tau-bench":
        return json.dumps(json.loads(TAU_BENCH_FILE.read_text())[:3], indent=1)
    if kind == "tau2-bench":
        data = json.loads(TAU2_FILE.read_text())
        sims = data["simulations"][:2]
        wanted = {str(s["task_id"]) for s in sims}
        data["simulations"] = sims
        data["tasks"] = [t for t in data["tasks"] if str(t.get("id")) in wanted]
        return json.dumps(data, indent=1)
    if kind == "tau2-bench-list":
        return json.dumps(json.loads(TAU2_FILE.read_text())["simulations"][:2], indent=1)
    if kind in TOOLSANDBOX_FILES:
        return (TOOLSANDBOX_RUN / TOOLSANDBOX_FILES[kind]).read_text()
    if kind == "openai-jsonl":
        runs = json.loads(TAU_BENCH_FILE.read_text())[:3]
        lines = [{"task_id": r["task_id"], "trial": r["trial"], "reward": r["reward"], "messages": r["traj"]} for r in runs]
        return "\n".join(json.dumps(x) for x in lines) + "\n"
    raise AssertionError(kind)


SEEDS = ("tau-bench", "tau2-bench", "tau2-bench-list", "openai-jsonl")
TOOLSANDBOX_RUN = (Path(__file__).resolve().parent / "data" / "toolsandbox"
                   / "agent_gpt-3.5-turbo-0125_user_gpt-4o-2024-05-13_06_02_2024_11_30_00")
TOOLSANDBOX_FILES = {
    "toolsandbox-summary": "result_summary.json",
    "toolsandbox-conversation": "trajectories/send_message_with_contact_content_cellular_off_multiple_user_turn/"
                                "conversation.json",
    "toolsandbox-context": "trajectories/remove_contact_by_phone_multiple_user_turn_3_distraction_tools/"
                           "execution_context.json",
}


def _parsed(kind: str) -> Any:
    text = _seed_text(kind)
    if kind == "openai-jsonl":
        return [json.loads(line) for line in text.splitlines()]
    return json.loads(text)


def _serialize(kind: str, data: Any) -> str:
    if kind == "openai-jsonl" and isinstance(data, list):
        return "\n".join(json.dumps(x) for x in data) + "\n"
    return json.dumps(data, indent=4 if kind in TOOLSANDBOX_FILES else 1)


@lru_cache(maxsize=None)
def _paths(kind: str) -> tuple[tuple, ...]:
    """Every path (tuple of keys / indexes) to a node of the seed's JSON."""
    out: list[tuple] = []

    def walk(node: Any, path: tuple) -> None:
        out.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + (i,))

    walk(_parsed(kind), ())
    return tuple(out)


# Paths the loaders look at first are worth more draws than a random leaf deep in a message.
HOT_KEYS = {"task_id", "trial", "reward", "success", "traj", "messages", "simulations", "tasks", "info", "role",
            "content", "tool_calls", "function", "name", "arguments", "id", "tool_call_id", "reward_info", "actions",
            "kwargs", "requestor", "environment_info", "tool_defs", "evaluation_criteria", "task", "error",
            "per_scenario_results", "similarity", "categories", "traceback", "_dbs", "SANDBOX", "sender", "recipient",
            "openai_tool_call_id", "openai_function_name", "tool_call_exception", "visible_to", "tool_allow_list",
            "tool_deny_list"}


@lru_cache(maxsize=None)
def _hot_paths(kind: str) -> tuple[tuple, ...]:
    return tuple(p for p in _paths(kind) if p and p[-1] in HOT_KEYS) or _paths(kind)


REPLACEMENTS = [None, True, False, 0, -1, 1.5, 10**30, 10**400, float("nan"), float("inf"), "", "x", "Error: boom",
                [], [None], [{}], {}, {"name": 5}, {"role": None}, "\ud800", "\x00"]


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _apply(data: Any, op: str, path: tuple, value: Any) -> Any:
    value = copy.deepcopy(value)  # a shared replacement retyped into itself later would make the data circular
    if not path:
        return value if op == "retype" else data
    parent = _get(data, path[:-1])
    key = path[-1]
    if op == "delete":
        if isinstance(parent, dict):
            parent.pop(key, None)
        elif isinstance(parent, list) and key < len(parent):
            parent.pop(key)
    elif op == "retype":
        if isinstance(parent, dict) or (isinstance(parent, list) and key < len(parent)):
            parent[key] = value
    elif op == "duplicate" and isinstance(parent, list) and key < len(parent):
        parent.insert(key, copy.deepcopy(parent[key]))
    return data


@st.composite
def structural_mutations(draw, kind: str) -> list[tuple[str, tuple, Any]]:
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        pool = _hot_paths(kind) if draw(st.booleans()) else _paths(kind)
        path = draw(st.sampled_from(pool))
        op = draw(st.sampled_from(["delete", "retype", "retype", "duplicate"]))
        value = draw(st.sampled_from(REPLACEMENTS) | st.text(max_size=5) | st.integers())
        ops.append((op, path, value))
    return ops


@st.composite
def byte_mutations(draw, size: int) -> list[tuple[str, int, bytes]]:
    ops = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        pos = draw(st.integers(min_value=0, max_value=max(0, size - 1)))
        payload = draw(st.binary(min_size=1, max_size=8))
        ops.append((op, pos, payload))
    return ops


def _apply_bytes(raw: bytes, ops: list[tuple[str, int, bytes]]) -> bytes:
    for op, pos, payload in ops:
        pos = min(pos, len(raw))
        if op == "flip" and pos < len(raw):
            raw = raw[:pos] + bytes([raw[pos] ^ (payload[0] or 1)]) + raw[pos + 1 :]
        elif op == "insert":
            raw = raw[:pos] + payload + raw[pos:]
        elif op == "delete":
            raw = raw[:pos] + raw[pos + len(payload) :]
        elif op == "truncate":
            raw = raw[:pos]
    return raw


def _event(text: str) -> None:
    if currently_in_test_context():
        event(text)


def _load_and_use(path, skip_invalid: bool, dump: bool = True) -> LoadResult | TrajectoryFormatError:
    with user_stack():  # hypothesis raises the recursion limit; users load files under the default one
        return _load_and_use_inner(path, skip_invalid, dump)


def _load_and_use_inner(path, skip_invalid: bool, dump: bool) -> LoadResult | TrajectoryFormatError:
    try:
        result = load_runs([path], skip_invalid=skip_invalid)
    except TrajectoryFormatError as exc:
        assert not skip_invalid, f"skip_invalid=True must not raise for an existing file: {exc}"
        text = str(exc)
        assert text and "\n" not in text  # the documented one-line message
        _event("TrajectoryFormatError")
        return exc
    # What was loaded must be usable downstream.
    for run in result.runs:
        ActionTrace.from_run(run)
        if dump:
            run.model_dump(mode="json")  # (not model_dump_json: see test_lone_surrogate_escapes_survive_loading)
    build_profile(result.runs)
    summarize(result.runs)
    _event(f"loaded {len(result.runs)} run(s), skipped {len(result.skipped)}")
    return result


@pytest.mark.parametrize("kind", SEEDS)
def test_unmutated_seeds_load(kind, tmp_path):
    path = tmp_path / ("runs.jsonl" if kind == "openai-jsonl" else "runs.json")
    path.write_text(_seed_text(kind))
    result = load_runs([path])
    assert len(result.runs) in (2, 3) and not result.skipped


@pytest.mark.parametrize("kind", SEEDS)
@examples(40, 700)
@given(data=st.data())
def test_property_structural_mutations_load_or_format_error(kind, data, tmp_path):
    mutated = copy.deepcopy(_parsed(kind))
    for op, path, value in data.draw(structural_mutations(kind)):
        try:
            mutated = _apply(mutated, op, path, value)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or retyped this path
    raw = _serialize(kind, mutated).encode("utf-8", errors="surrogatepass")
    if data.draw(st.integers(min_value=0, max_value=3)) == 0:  # mostly structure only, so runs get past json.loads
        raw = _apply_bytes(raw, data.draw(byte_mutations(len(raw))))
    path = tmp_path / ("runs.jsonl" if kind == "openai-jsonl" else "runs.json")
    path.write_bytes(raw)
    _load_and_use(path, skip_invalid=data.draw(st.booleans()))


@pytest.mark.parametrize("kind", sorted(TOOLSANDBOX_FILES))
@examples(30, 500)
@given(data=st.data())
def test_property_toolsandbox_folder_mutations_load_or_format_error(kind, data, tmp_path_factory):
    """One file of a ToolSandbox run folder mutated: loading the folder gives runs or a located format error."""
    folder = tmp_path_factory.mktemp("ts") / TOOLSANDBOX_RUN.name
    shutil.copytree(TOOLSANDBOX_RUN, folder)
    mutated = copy.deepcopy(_parsed(kind))
    for op, path, value in data.draw(structural_mutations(kind)):
        try:
            mutated = _apply(mutated, op, path, value)
        except (KeyError, IndexError, TypeError):
            pass
    raw = _serialize(kind, mutated).encode("utf-8", errors="surrogatepass")
    if data.draw(st.integers(min_value=0, max_value=3)) == 0:
        raw = _apply_bytes(raw, data.draw(byte_mutations(len(raw))))
    (folder / TOOLSANDBOX_FILES[kind]).write_bytes(raw)
    _load_and_use(folder, skip_invalid=data.draw(st.booleans()))


@pytest.mark.parametrize("kind", SEEDS)
@examples(30, 700)
@given(data=st.data())
def test_property_byte_mutations_load_or_format_error(kind, data, tmp_path):
    raw = _seed_text(kind).encode()
    ops = data.draw(st.lists(st.tuples(
        st.sampled_from(["flip", "insert", "delete", "truncate"]),
        st.integers(min_value=0, max_value=len(raw) - 1),
        st.binary(min_size=1, max_size=8),
    ), min_size=1, max_size=6))
    path = tmp_path / ("runs.jsonl" if kind == "openai-jsonl" else "runs.json")
    path.write_bytes(_apply_bytes(raw, ops))
    _load_and_use(path, skip_invalid=data.draw(st.booleans()))


@examples(40, 700)
@given(raw=st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_property_arbitrary_bytes_load_or_format_error(raw, tmp_path):
    path = tmp_path / "anything.json"
    path.write_bytes(raw)
    _load_and_use(path, skip_invalid=False)


def _regression_inputs() -> dict[str, str]:
    run = json.loads(_seed_text("tau-bench"))[0]
    line = json.dumps({"task_id": 1, "reward": 1.0, "messages": [{"role": "user", "content": "hi"}]})
    big = "9" * 5000
    return {
        # float(10**400) raised OverflowError out of load_runs (found by this module's structural mutations).
        "reward_int_over_float_range": json.dumps([dict(run, reward=10**400)]),
        # json.loads raises a plain ValueError (not JSONDecodeError) past Python's 4300-digit int limit.
        "json_int_over_digit_limit": '[{"task_id": 1, "reward": ' + big + ', "traj": [{"role": "user"}]}]',
        "jsonl_int_over_digit_limit_line_1": '{"task_id": 1, "reward": ' + big + ', "messages": []}\n' + line + "\n",
        "jsonl_int_over_digit_limit_line_2": line + '\n{"task_id": 2, "reward": ' + big + ', "messages": []}\n',
    }


@pytest.mark.parametrize("name", sorted(_regression_inputs()))
@pytest.mark.parametrize("skip_invalid", [False, True])
def test_loader_regressions_give_format_errors(name, skip_invalid, tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(_regression_inputs()[name])
    out = _load_and_use(path, skip_invalid=skip_invalid)
    if isinstance(out, LoadResult):
        assert out.skipped  # the bad run (or file) is reported, never silently loaded


def test_lone_surrogate_escapes_survive_loading(tmp_path):
    path = tmp_path / "runs.jsonl"
    line = {"task_id": 1, "reward": 1.0, "messages": [{"role": "user", "content": "broken emoji \ud83d"}]}
    path.write_text(json.dumps(line) + "\n" + json.dumps(dict(line, task_id=2)) + "\n")
    try:
        result = load_runs([path])
    except TrajectoryFormatError:
        return  # rejecting the file is fine too
    for run in result.runs:
        run.model_dump_json()
        assert run.messages[0]["content"] == "broken emoji \ufffd"


@pytest.mark.parametrize("depth", [100, 600, 950])
def test_deeply_nested_arguments_load_and_trace(depth, tmp_path):
    """Tool-call arguments nested hundreds deep: loading, tracing and profiling must not overflow the stack."""
    run = json.loads(_seed_text("tau-bench"))[0]
    call_msg = next(m for m in run["traj"] if m.get("tool_calls"))
    call_msg["tool_calls"][0]["function"]["arguments"] = '{"x": ' + "[" * depth + "]" * depth + "}"
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([run]))
    _load_and_use(path, skip_invalid=False, dump=False)  # (dumping: see test_deeply_nested_runs_serialize)


def test_deeply_nested_runs_serialize(tmp_path):
    run = json.loads(_seed_text("tau-bench"))[0]
    call_msg = next(m for m in run["traj"] if m.get("tool_calls"))
    call_msg["tool_calls"][0]["function"]["arguments"] = '{"x": ' + "[" * 300 + "]" * 300 + "}"
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([run]))
    try:
        result = load_runs([path])
    except TrajectoryFormatError:
        return
    for r in result.runs:
        r.model_dump_json()
        assert r.meta.get("undecodable_arguments")  # replaced by {} and reported, not silently kept


@pytest.mark.parametrize("call_id", [[None], {"a": 1}, 7, 2.5, True])
def test_non_string_call_ids_load(call_id, tmp_path):
    """Found by the structural mutations (a tau2 tool message's "id" retyped to [None]): a list or object id raised
    TypeError (unhashable) out of load_runs. Ids of any JSON type are now compared by their JSON text."""
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function",
                                                                "function": {"name": "get_x", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "result"},
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps({"task_id": i, "reward": 1.0, "messages": msgs}) for i in range(2)) + "\n")
    out = _load_and_use(path, skip_invalid=False)
    assert isinstance(out, LoadResult) and len(out.runs) == 2
    assert out.runs[0].tool_calls[0].result == "result"
