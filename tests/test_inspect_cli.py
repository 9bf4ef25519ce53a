"""`trace-envs inspect`: pinned numbers on the real data, bad input -> one error line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner


DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2-bench" / "results"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    from trace_envs.cli import _load_commands, app

    _load_commands()
    return app


def run_cli(app, *args: str):
    return CliRunner().invoke(app, ["inspect", *map(str, args)])


def as_json(app, *args):
    res = run_cli(app, *args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def by_domain(app, *args) -> dict[str, dict]:
    """`inspect --json` prints one object per domain, one per line."""
    res = run_cli(app, *args, "--json")
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    return {d["domain"]: d for d in lines}


def _jsonl_line(task_id, success=True):
    return json.dumps(
        {
            "task_id": task_id,
            "success": success,
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "function": {"name": "get_order", "arguments": {"id": 1}}}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "{}"},
                {"role": "assistant", "content": "ok"},
            ],
        }
    )


@needs_data
def test_tau_bench_numbers(app):
    out = as_json(app, TAU)
    assert (out["runs"], out["passed"], out["failed"], out["tasks"], out["mixed_tasks"]) == (200, 84, 116, 50, 26)
    assert out["tools"]["get_reservation_details"] == {
        **out["tools"]["get_reservation_details"],
        "calls": 377,
        "kind": "read",
    }
    assert out["tools"]["cancel_reservation"]["kind"] == "write"
    assert out["skipped"] == 0 and out["files"] == [str(TAU)]


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
def test_tau2_numbers(app, name, runs, passed):
    out = as_json(app, TAU2 / f"{name}.json")
    assert (out["runs"], out["passed"], out["failed"], out["tasks"]) == (runs, passed, runs - passed, runs)


@needs_data
def test_readable_summary(app):
    res = run_cli(app, TAU)
    assert res.exit_code == 0, res.output
    assert "runs: 200  passed: 84  failed: 116" in res.stdout
    assert "tasks: 50  mixed outcomes: 26" in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if "get_reservation_details" in ln)
    assert "377" in line and "read" in line


@needs_data
def test_directory_and_glob(app, tmp_path):
    (tmp_path / "a.json").symlink_to(TAU)
    (tmp_path / "b.json").symlink_to(TAU2 / "gpt-4.1_retail.json")
    (tmp_path / "c.jsonl").write_text(_jsonl_line("x") + "\n" + _jsonl_line("x", False) + "\n")
    out = by_domain(app, tmp_path)
    assert sorted(out) == ["airline", "retail"]  # the JSONL file's get_order makes it retail
    air, ret = out["airline"], out["retail"]
    assert (air["runs"], air["tasks"], air["mixed_tasks"], air["sources"]) == (200, 50, 26, {"tau-bench": 200})
    assert air["files"] == [str(tmp_path / "a.json")]
    assert (ret["runs"], ret["tasks"], ret["mixed_tasks"]) == (42, 41, 1)
    assert ret["sources"] == {"tau2-bench": 40, "openai-jsonl": 2}
    assert ret["files"] == [str(tmp_path / "b.json"), str(tmp_path / "c.jsonl")]
    assert "get_order" in ret["tools"] and "get_order" not in air["tools"]
    out = as_json(app, str(TAU2 / "gpt-4.1_*retail.json"))
    assert out["runs"] == 40 and out["passed"] == 34
    assert out["tools"]["get_order_details"]["kind"] == "read"


@needs_data
def test_tau2_results_folder_splits_by_domain(app):
    """The real tau2 folder holds airline and retail runs of two models: two domains, never one merged profile."""
    out = by_domain(app, TAU2)
    assert sorted(out) == ["airline", "retail"]
    air, ret = out["airline"], out["retail"]
    assert (air["runs"], air["passed"], air["tasks"], air["mixed_tasks"]) == (40, 23, 20, 9)
    assert (ret["runs"], ret["passed"], ret["tasks"], ret["mixed_tasks"]) == (80, 68, 40, 12)
    assert [Path(f).name for f in air["files"]] == ["ft-gpt-4.1_airline.json", "gpt-4.1_airline.json"]
    assert not any("order" in t for t in air["tools"]) and "cancel_reservation" in air["tools"]
    assert not any("reservation" in t for t in ret["tools"]) and "cancel_pending_order" in ret["tools"]
    res = run_cli(app, TAU2)
    assert res.exit_code == 0, res.output
    blocks = [ln for ln in res.stdout.splitlines() if ln.startswith("domain: ")]
    assert [b.split()[1] for b in blocks] == ["airline", "retail"]
    assert "runs: 40  passed: 23  failed: 17" in res.stdout and "runs: 80  passed: 68  failed: 12" in res.stdout


def test_jsonl_domain_field_splits(app, tmp_path):
    """A JSONL run's `domain` field decides its domain, even inside one file."""
    lines = [json.loads(_jsonl_line(t, ok)) for t, ok in (("a", True), ("b", False), ("c", True))]
    lines[2]["domain"] = "telecom"
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = by_domain(app, path)
    assert {d: v["runs"] for d, v in out.items()} == {"retail": 2, "telecom": 1}


BAD = {
    "empty.json": (b"", None),
    "bin.json": (bytes(range(256)) * 8, None),
    "invalid-utf8.jsonl": (b'{"task_id": "\xff\xfe"}\n', None),
    "trunc.json": (b'[{"task_id": 1, "reward": 0, "traj": [{"role": "us', "line 1 column"),
    "shape.json": (b'{"hello": "world"}', "supported formats"),
    "nomsgs.json": (b'[{"task_id": 7, "reward": 0, "traj": []}]', "run index 0 (task 7)"),
    "nullmsgs.jsonl": (b'{"task_id": 3, "reward": 1, "messages": null}\n', "line 1"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_exit_2_one_line(app, tmp_path, name):
    content, where = BAD[name]
    path = tmp_path / name
    path.write_bytes(content)
    res = run_cli(app, path)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: ") and name in lines[0]
    if where:
        assert where in lines[0]
    assert "Traceback" not in res.output and res.stdout == ""


def test_missing_file_and_bad_kinds(app, tmp_path):
    res = run_cli(app, tmp_path / "nope.json")
    assert res.exit_code == 2 and "nope.json: no such file or directory" in res.stderr
    good = tmp_path / "g.jsonl"
    good.write_text(_jsonl_line("a") + "\n")
    kinds = tmp_path / "kinds.json"
    kinds.write_text('{"get_order": "sometimes"}')
    res = run_cli(app, good, "--kinds", kinds)
    assert res.exit_code == 2 and "kinds.json" in res.stderr and "get_order" in res.stderr
    kinds.write_text('{"get_order": "write"}')
    out = as_json(app, good, "--kinds", kinds)
    assert out["tools"]["get_order"]["kind"] == "write" and out["tools"]["get_order"]["kind_source"] == "override"


def test_skip_invalid(app, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(
        "\n".join([_jsonl_line("a"), '{"task_id": "b", "messages": [{"role"', _jsonl_line("c", False)]) + "\n"
    )
    res = run_cli(app, path)
    assert res.exit_code == 2 and "runs.jsonl: line 2" in res.stderr
    out = as_json(app, path, "--skip-invalid")
    assert out["runs"] == 2 and out["skipped"] == 1 and "line 2" in out["skipped_reasons"][0]
    res = run_cli(app, path, "--skip-invalid")
    assert res.exit_code == 0 and "skipped: 1" in res.stdout


def test_console_script(tmp_path):
    exe = Path(sys.executable).parent / "trace-envs"
    if not exe.exists():
        pytest.skip("console script not installed (pip install -e .)")
    path = tmp_path / "r.jsonl"
    path.write_text(_jsonl_line("a") + "\n")
    proc = subprocess.run([str(exe), "inspect", str(path), "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["runs"] == 1
    (tmp_path / "bad.json").write_text("[")
    proc = subprocess.run([str(exe), "inspect", str(tmp_path / "bad.json")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "bad.json: line 1 column 2" in proc.stderr
