"""`trace-envs schema | list | check | play | generate` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest
from typer.testing import CliRunner

import trace_envs  # noqa: F401
from trace_envs.cli import _load_commands, app
from trace_envs.families import all_tasks
from trace_envs.spec.io import json_schema

ROOT = Path(__file__).resolve().parents[1]
ENV = "trace/airline_check_cabin_before_cancel"
FAMILIES = len(all_tasks())  # the bundled envs cover every registered family, one example each

_load_commands()


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


def test_schema_prints_the_spec_schema():
    res = run("schema")
    assert res.exit_code == 0 and json.loads(res.stdout) == json_schema()


def test_list_json_covers_every_family():
    res = run("list", "--json")
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    assert {"id", "family", "path", "description"} <= set(rows[0])
    assert FAMILIES >= 9 and len(rows) >= FAMILIES and len({r["family"] for r in rows}) == FAMILIES


@pytest.mark.parametrize("columns", [40, 80, 120, 200])
def test_list_never_cuts_an_id(columns, tmp_path, monkeypatch):
    """Every id (one of 63 characters among them) appears whole, on one line, at any terminal width: the description
    column shrinks, then goes, then the table gives way to plain lines."""
    import shutil

    long_name = "a" * 40 + "_long_capability_name_that_wraps"[:23]
    shutil.copytree(ROOT / "generated" / "airline_check_cabin_before_cancel", tmp_path / long_name)
    monkeypatch.setenv("TRACE_ENVS_PATH", str(tmp_path))
    res = CliRunner().invoke(app, ["list"], env={"COLUMNS": str(columns), "TRACE_ENVS_PATH": str(tmp_path)})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    from trace_envs.registry import registered

    ids = sorted(registered())
    assert f"trace/{long_name}" in ids and len(long_name) == 63
    for env_id in ids:
        assert any(env_id in line for line in lines), (columns, env_id)
    assert all(len(line) <= max(columns, len(f"trace/{long_name}  precondition_before_write")) for line in lines)
    assert ("description" in res.stdout) == (columns >= 150)


def test_check_json_reports_every_measure():
    res = run("check", ENV, "--json", "--seeds", "5")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["oracle"] == 1.0 and report["env_checker"] == "passed"
    assert all(v < 1.0 for v in report["mutants"].values()) and report["random"] < 0.2 and report["passive"] < 0.2


def test_check_unknown_env_is_exit_2():
    res = run("check", "trace/nope")
    assert res.exit_code == 2 and "unknown env 'trace/nope'" in res.output
    assert "Looked in: " in res.output and "TRACE_ENVS_PATH=DIR" in res.output  # where it looked, how to add one


def test_play_the_oracle_in_the_terminal():
    env = gym.make(ENV)
    env.reset(seed=3)
    actions = env.unwrapped.oracle_actions()
    res = run("play", ENV, "--seed", "3", stdin="/tools\n" + "\n".join(actions) + "\n")
    assert res.exit_code == 0, res.output
    assert "episode over: reward 1.000" in res.output


def test_play_says_why_each_clause_fell_short():
    env = gym.make(ENV)
    env.reset(seed=3)
    closing = env.unwrapped.oracle_actions()[-1]  # the goodbye alone: nothing looked up, nothing done
    res = run("play", ENV, "--seed", "3", stdin=closing + "\n")
    assert res.exit_code == 0, res.output
    assert "explained (0.00): not met: no successful call of get_reservation_details(reservation_id=" in res.output


def test_play_with_piped_input_reads_as_a_conversation(tmp_path):
    """`trace-envs play ENV < actions.txt`, in a real process: each agent turn follows its `agent>` prompt on the
    same line, the env's reply on the next, and the reward closes the transcript."""
    import os
    import subprocess
    import sys

    env = gym.make(ENV)
    env.reset(seed=3)
    actions = env.unwrapped.oracle_actions()
    script = tmp_path / "actions.txt"
    script.write_text("\n".join(actions) + "\n")
    with script.open() as stdin:
        res = subprocess.run([sys.executable, "-m", "trace_envs", "play", ENV, "--seed", "3"], stdin=stdin,
                             capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    turns = [line.removeprefix("agent> ") for line in lines if line.startswith("agent> ")]
    assert turns == actions
    for action in actions:
        i = lines.index(f"agent> {action}")
        assert lines[i + 1].startswith("env: ")
    assert lines[-1].startswith("episode over: reward 1.000  breakdown {")


def test_play_prints_the_score_when_the_input_ends_first():
    env = gym.make(ENV)
    env.reset(seed=3)
    first = env.unwrapped.oracle_actions()[0]  # the lookup, then the input ends
    res = run("play", ENV, "--seed", "3", stdin=first + "\n")
    assert res.exit_code == 0, res.output
    assert f"agent> {first}\nenv: " in res.output
    assert "episode not over: score so far 0.000  breakdown {" in res.output
    assert "  explained (0.00): " in res.output


def test_generate_reports_a_spec_that_fails_validation(tmp_path):
    spec = json.loads((ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json").read_text())
    # A check that only asks for the lookup cannot tell the oracle from its mutants: validation must refuse it.
    spec["check"]["clauses"] = spec["check"]["clauses"][:1]
    spec["name"] = "broken_precondition"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(spec))
    res = run("generate", str(path), "-o", str(tmp_path / "out"), "--json")
    assert res.exit_code == 1
    line = json.loads(res.stdout.strip().splitlines()[-1])
    assert line["published"] is False and line["error"]
    assert not (tmp_path / "out" / "broken_precondition").exists()


def test_generate_rejects_params_the_family_cannot_use(tmp_path):
    spec = json.loads((ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json").read_text())
    spec["params"]["allowed"] = []  # no value would ever allow the write
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(spec))
    res = run("generate", str(path), "-o", str(tmp_path / "out"))
    assert res.exit_code == 2
    assert ".params.allowed: [] should be non-empty" in res.output
