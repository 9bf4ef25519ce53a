"""Expected actions trusted only as far as the runs bear them out: a tau2 file whose task ids disagree with the actions
its simulations were graded on is detected and read by the graded actions; a file whose passed runs do not make
their expected actions has them set aside. Fixtures are derived in the test from the real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trace_envs.checks.attribution import attribute
from trace_envs.cli import _load_commands, app
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile
from trace_envs.trajectories.trust import audit, set_aside

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
RETAIL = DATA / "tau2-bench" / "results" / "gpt-4.1_retail.json"
TELECOM = DATA / "tau2-bench" / "telecom-results" / "gpt-4.1_telecom.json"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


def _rotated(ids: list[str]) -> dict[str, str]:
    return {a: ids[(i + 1) % len(ids)] for i, a in enumerate(ids)}


@pytest.fixture(scope="module")
def permuted(tmp_path_factory) -> Path:
    """The real tau2 retail results with the simulations' task ids permuted as the public gpt-5 file had them: all
    but one simulation names another task than the one it ran and was graded on (its `action_checks` untouched)."""
    doc = json.loads(RETAIL.read_text())
    sims = doc["simulations"]
    moved = _rotated(sorted({s["task_id"] for s in sims}, key=int))
    for sim in sims[1:]:
        sim["task_id"] = moved[sim["task_id"]]
    path = tmp_path_factory.mktemp("trust") / "gpt-4.1_retail_permuted.json"
    path.write_text(json.dumps(doc))
    return path


def _clean(runs) -> dict[str, list]:
    """Per passed run (by task and trial), its departures from its expected actions."""
    kinds = build_profile(runs).kinds
    return {(r.task_id, r.trial): [(d.kind, d.tool, d.arg) for d in attribute(r, kinds).departures]
            for r in runs if r.success}


@needs_data
def test_a_permuted_results_file_is_detected_and_read_by_its_graded_actions(permuted):
    original, read = load_runs([RETAIL]).runs, load_runs([permuted]).runs
    [finding] = audit(read)
    assert (finding.kind, finding.file, finding.affected, finding.total) == (
        "graded_on_another_task", str(permuted), 39, 40)
    assert str(permuted) in finding.message and "39 of 40 simulations (98%)" in finding.message
    # each simulation is read as the task it ran: its id, instruction and expected actions
    assert [(r.task_id, r.instruction, r.ground_truth) for r in read] == [
        (r.task_id, r.instruction, r.ground_truth) for r in original]
    assert sum("task_id_in_file" in r.meta for r in read) == 39
    # the attribution of its passed runs is as clean as on the original file
    assert _clean(read) == _clean(original)
    assert sum(bool(d) for d in _clean(read).values()) == sum(bool(d) for d in _clean(original).values()) <= 9


@needs_data
def test_read_by_task_id_the_passed_runs_would_not_make_their_expected_actions(permuted):
    """What trusting task_id did: each simulation given its file task's expected actions. The passed runs then do not
    make them on most tasks, which the second check catches: those expected actions are set aside."""
    doc = json.loads(permuted.read_text())
    tasks = {t["id"]: t for t in doc["tasks"]}
    for sim in doc["simulations"]:
        sim["reward_info"]["action_checks"] = [
            {"action": a, "action_match": True} for a in tasks[sim["task_id"]]["evaluation_criteria"]["actions"]]
    trusting = permuted.with_name("trusting_task_id.json")
    trusting.write_text(json.dumps(doc))
    runs = load_runs([trusting]).runs
    [finding] = audit(runs)
    assert finding.kind == "expected_actions_not_made" and finding.share > 0.5
    assert all(r.ground_truth is None and "expected_actions_set_aside" in r.meta for r in set_aside(runs, [finding]))


@needs_data
def test_a_bare_list_is_read_by_its_graded_actions(permuted, tmp_path):
    """A leaderboard submission (a bare list) carries no tasks: its simulations' graded actions are their expected
    actions, whatever task id they name."""
    bare = tmp_path / "submission.json"
    bare.write_text(json.dumps(json.loads(permuted.read_text())["simulations"]))
    original, read = load_runs([RETAIL]).runs, load_runs([bare]).runs
    assert [r.ground_truth for r in read] == [r.ground_truth for r in original]
    assert audit(read) == []


@needs_data
def test_expected_actions_of_other_tasks_are_set_aside(tmp_path):
    """The real tau-bench file with each task's expected actions moved to the next task: on most tasks the passed
    runs do not make them; they are set aside and the file named."""
    doc = json.loads(TAU.read_text())
    actions = {r["task_id"]: r["info"]["task"]["actions"] for r in doc}
    moved = _rotated(sorted(actions))
    for r in doc:
        r["info"]["task"]["actions"] = actions[moved[r["task_id"]]]
    path = tmp_path / "airline_shifted.json"
    path.write_text(json.dumps(doc))
    runs = load_runs([path]).runs
    [finding] = audit(runs)
    assert finding.kind == "expected_actions_not_made" and finding.file == str(path) and finding.share > 0.5
    assert all(r.ground_truth is None for r in set_aside(runs, [finding]))


@needs_data
def test_expected_action_lists_empty_on_every_task_are_set_aside(tmp_path):
    """The real tau-bench file written by a converter that fills every task's `actions` with []: passed runs write,
    yet no task expects anything; the lists are set aside (as for a source without them) and the file named."""
    doc = json.loads(TAU.read_text())
    for r in doc:
        r["info"]["task"]["actions"] = []
    path = tmp_path / "airline_empty_actions.json"
    path.write_text(json.dumps(doc))
    runs = load_runs([path]).runs
    [finding] = audit(runs)
    assert finding.kind == "expected_actions_all_empty" and finding.file == str(path)
    assert finding.total == len({r.task_id for r in runs}) and "every expected-action list" in finding.message
    assert all(r.ground_truth is None for r in set_aside(runs, [finding]))


@needs_data
@pytest.mark.parametrize("path", [TAU, RETAIL.parent, TELECOM])
def test_the_real_files_check_out(path):
    runs = load_runs([path]).runs
    assert audit(runs) == []
    assert set_aside(runs, []) is runs


@needs_data
def test_inspect_diagnose_and_mine_print_the_warning(permuted, tmp_path):
    _load_commands()
    runner = CliRunner()
    warning = f"warning: {permuted}: 39 of 40 simulations (98%)"
    res = runner.invoke(app, ["inspect", str(permuted)])
    assert res.exit_code == 0 and warning in res.stdout, res.output
    res = runner.invoke(app, ["inspect", str(permuted), "--json"])
    assert json.loads(res.stdout)["data_warnings"][0].startswith(warning[len("warning: "):])
    res = runner.invoke(app, ["diagnose", str(permuted)])
    assert res.exit_code == 0 and warning in res.stdout, res.output
    res = runner.invoke(app, ["mine", str(permuted), "-o", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0 and warning in res.stdout, res.output
