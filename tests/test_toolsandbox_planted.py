"""The ToolSandbox-format planted set: its run folders round-trip through the ToolSandbox reader with the planted
outcomes, `inspect` reports them, offline mining recovers the planted deficits whose families exist (each by the
family that teaches it, nothing else kept), and every kept capability generates an env that keeps ToolSandbox's tool
names."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trace_envs.datasets import toolsandbox_planted as tsp
from trace_envs.generate.publish import generate_one
from trace_envs.mining.label import spec_target_tools
from trace_envs.mining.pipeline import MineOptions, mine
from trace_envs.trajectories.formats.toolsandbox import _FOLDER_NAME as FOLDER_NAME
from trace_envs.trajectories.loaders import load_runs


@pytest.fixture(scope="module")
def six(tmp_path_factory) -> tuple[Path, list[tsp.Truth]]:
    root = tmp_path_factory.mktemp("tsp6")
    return root, tsp.write_planted(root, folders=6, seed=0)


def test_folders_are_toolsandbox_run_folders(six):
    root, truths = six
    folders = sorted(p.name for p in root.iterdir())
    assert len(folders) == 6 and all(FOLDER_NAME.match(f) for f in folders)
    run = root / folders[0]
    summary = json.loads((run / "result_summary.json").read_text())
    assert len(summary["per_scenario_results"]) == len(tsp.SCENARIOS) * len(tsp.AUGMENTATIONS) == 32
    name = "send_message_with_contact_content_cellular_off"
    context = json.loads((run / "trajectories" / name / "execution_context.json").read_text())
    assert set(context["_dbs"]) == {"SANDBOX", "SETTING", "CONTACT", "MESSAGING", "REMINDER"}
    replies = [r["content"] for r in context["_dbs"]["SANDBOX"] if r["sender"] == "EXECUTION_ENVIRONMENT"]
    assert "ConnectionError: Cellular service is not enabled" in replies
    assert (context["_dbs"]["SETTING"][1]["cellular"], context["tool_allow_list"][0]) == (False, "end_conversation")


def test_round_trip_through_the_reader_with_exact_counts(six):
    root, truths = six
    runs = load_runs([root]).runs
    assert (len(runs), sum(r.success for r in runs)) == (192, 91)
    assert len({r.task_id for r in runs}) == 32 and Counter(r.trial for r in runs) == {t: 32 for t in range(6)}
    truth = {(t.folder, t.scenario): t for t in truths}
    for r in runs:
        t = truth[(r.meta["run_folder"], r.task_id)]
        assert (r.reward, r.success) == (t.similarity, t.similarity == 1.0), r.run_id
        assert r.success == (not t.deficits and not t.noise)
    shown = Counter(d for t in truths for d in t.deficits)
    assert shown == {"ignores_state_dependency": 33, "invents_phone_number": 22, "never_tells_result": 38}
    # a state-dependency failure is a located tool error with ToolSandbox's exception, the fix a retry after it
    errors = Counter((e["tool"], e["type"], e["message"]) for r in runs for e in r.meta.get("tool_exceptions", []))
    assert errors == {("send_message_with_phone_number", "ConnectionError", "Cellular service is not enabled"): 48,
                      ("set_cellular_service_status", "PermissionError",
                       "Cellular service cannot be turned on in low battery mode"): 11,
                      ("search_stock", "ConnectionError", "Wifi is not enabled"): 24}
    fixed = next(r for r in runs if r.task_id == "send_message_with_contact_content_cellular_off" and r.success)
    assert [(c.name, c.error) for c in fixed.agent_calls] == [
        ("search_contacts", False), ("send_message_with_phone_number", True), ("set_cellular_service_status", False),
        ("send_message_with_phone_number", False)]
    assert fixed.agent_calls[2].arguments == {"on": True} and fixed.agent_calls[2].result == "null"


def test_same_seed_same_folders(six, tmp_path):
    root, _ = six
    tsp.write_planted(tmp_path, folders=1, seed=0)
    name = tsp.folder_name(0, 0)
    for f in ("result_summary.json", "trajectories/find_stock_price_alt/conversation.json"):
        assert (tmp_path / name / f).read_bytes() == (root / name / f).read_bytes()


def test_inspect_prints_counts_tools_kinds_and_errors(six):
    from trace_envs.cli import _load_commands, app

    _load_commands()
    root, _ = six
    res = CliRunner().invoke(app, ["inspect", str(root), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert {k: report[k] for k in ("domain", "runs", "passed", "failed", "tasks")} == {
        "domain": "toolsandbox", "runs": 192, "passed": 91, "failed": 101, "tasks": 32}
    assert {n: (t["calls"], t["kind"], t["error_rate"]) for n, t in report["tools"].items()} == {
        "send_message_with_phone_number": (122, "write", 0.3934), "search_stock": (109, "read", 0.2202),
        "search_contacts": (74, "read", 0.0), "set_cellular_service_status": (37, "write", 0.2973),
        "set_wifi_status": (13, "write", 0.0), "set_low_battery_mode_status": (11, "write", 0.0)}
    text = CliRunner().invoke(app, ["inspect", str(root)]).stdout
    assert "runs: 192  passed: 91  failed: 101" in text


@pytest.fixture(scope="module")
def twelve(tmp_path_factory) -> tuple[Path, list[tsp.Truth]]:
    root = tmp_path_factory.mktemp("tsp12")
    return root, tsp.write_planted(root, folders=12, seed=0)


@pytest.fixture(scope="module")
def mined(twelve):
    return mine(load_runs([twelve[0]]).runs, options=MineOptions())


def test_mining_recovers_every_deficit_by_the_family_that_teaches_it(mined):
    kept = [(c.family, spec_target_tools(c)) for c in mined.capabilities]
    score = tsp.score(kept)
    assert score["unmatched"] == [] and score["precision"] == score["recall"] == 1.0, score
    assert {c.family: (c.roles.get("read"), c.roles.get("write"), c.roles.get("fix")) for c in mined.capabilities} == {
        "argument_grounding": ("search_contacts", "send_message_with_phone_number", None),
        "answer_from_records": ("search_stock", None, None),
        "error_recovery": ("search_contacts", "send_message_with_phone_number", "set_cellular_service_status")}
    assert next(c for c in mined.capabilities if c.family == "answer_from_records").params["field"] == "price"
    recover = next(c for c in mined.capabilities if c.family == "error_recovery")
    assert recover.params["error"] == "ConnectionError: Cellular service is not enabled"
    assert recover.params["fix_error"] == "PermissionError: Cellular service cannot be turned on in low battery mode"
    assert recover.params["reason"] == "Cellular service cannot be turned on in low battery mode"
    assert (recover.params["setting"], recover.params["unsetting"], recover.params["address"]) == (
        {"on": True}, {"on": False}, ["phone_number"])


def test_state_dependency_failures_are_the_recovery_capability_s(mined, twelve):
    """The failed runs that ignored the cellular dependency are LACKING for the kept error_recovery capability; the
    wifi ones (search_stock is a read, and error_recovery learns from writes) rest on no kept capability. The runs
    carry no expected actions: the report attributes departures against those the passed runs of the same scenario
    show (inferred), for every run whose scenario has a passed run."""
    import numpy as np

    from trace_envs.mining.label import LACKING

    m = mined.matrix
    col = {mined.candidates[j].spec.family: j for j in mined.selection.kept}
    ignored = {(t.folder, t.scenario) for t in twelve[1] if "ignores_state_dependency" in t.deficits}
    shown = [i for i, rid in enumerate(m.run_ids) if tuple(rid.split("/")[:2]) in ignored]
    cellular = [i for i in shown if "_cellular_off" in m.run_ids[i]]
    wifi = [i for i in shown if "_wifi_off" in m.run_ids[i]]
    assert (len(cellular), len(wifi)) == (45, 26)
    assert (m.labels[cellular, col["error_recovery"]] == LACKING).all()
    assert not (m.labels[np.ix_(wifi, list(col.values()))] == LACKING).any()
    runs = load_runs([twelve[0]]).runs
    passed_tasks = {r.task_id for r in runs if r.success}
    assert mined.diagnosis.runs_with_gt == sum(r.task_id in passed_tasks for r in runs) > 0


@pytest.mark.parametrize("family", ["answer_from_records", "argument_grounding", "error_recovery"])
def test_kept_capability_generates_an_env_with_toolsandbox_tool_names(mined, family, tmp_path):
    from trace_envs.registry import load_env_class

    (spec,) = [c for c in mined.capabilities if c.family == family]
    result = generate_one(spec, tmp_path, seeds=5)
    assert result.published, (spec.name, result.error)
    env = load_env_class(str(tmp_path / spec.name / "env.py"))()
    _, info = env.reset(seed=0)
    names = {t["function"]["name"] for t in info["tools"]}
    assert set(spec_target_tools(spec)) <= names <= set(tsp.ALL_TOOLS), (spec.name, names)
    assert {n: sorted(t["function"]["parameters"]["properties"]) for t in info["tools"]
            for n in [t["function"]["name"]]} == EXPECTED_ARGUMENTS[family]
    assert result.report.oracle == 1.0 and max(result.report.mutants.values()) < 1.0
    # ToolSandbox's result style: the read replies with the repr of the record, not JSON
    assert {t.result_style for t in spec.tools} == {"python-repr"}
    reply, *_ = env.step(env.scenario.oracle[0])
    assert reply.startswith("{'") and isinstance(ast.literal_eval(reply), dict), reply
    if family == "error_recovery":  # stateful settings: the send fails until cellular is on, then goes through
        replies = [env.step(a)[0] for a in env.scenario.oracle[1:-1]]
        assert replies[0] == "ConnectionError: Cellular service is not enabled"
        assert replies[1] == "None" and replies[2].startswith("{'success': True")


EXPECTED_ARGUMENTS = {
    "answer_from_records": {"search_stock": ["query"]},
    # the write takes no contact key: it is addressed by the phone number the search returned
    "argument_grounding": {"send_message_with_phone_number": ["content", "phone_number"], "search_contacts": ["name"]},
    # the fix is a device setting: set_cellular_service_status(on=True), as the runs made it
    "error_recovery": {"send_message_with_phone_number": ["content", "phone_number"], "search_contacts": ["name"],
                       "set_cellular_service_status": ["on"]},
}


@pytest.mark.parametrize("result, error, style, text", [
    ('{"name": "Fredrik", "is_self": false}', False, "python-repr", "{'name': 'Fredrik', 'is_self': False}"),
    ("f1b2c3d4", False, "python-repr", "'f1b2c3d4'"),
    (None, False, "python-repr", "None"),
    ({"error": "phone number '+1' not found"}, True, "python-repr", "ValueError: phone number '+1' not found"),
    ({"error": "ConnectionError: Cellular service is not enabled"}, True, "python-repr",
     "ConnectionError: Cellular service is not enabled"),
    ({"ok": True}, False, "json", '{"ok": true}'),
    ('{"ok": true}', False, "json", '{"ok": true}'),
])
def test_result_text_follows_the_result_style(result, error, style, text):
    from trace_envs.runtime.base import result_text

    assert result_text(result, error, style) == text


def test_profile_takes_the_result_style_from_the_runs(six):
    from trace_envs.trajectories.profile import build_profile

    root, _ = six
    runs = load_runs([root]).runs
    profile = build_profile(runs)
    assert {t.result_style for t in profile.tools.values()} == {"python-repr"}
    assert {t.result_style for t in build_profile(_retail_planted_runs()).tools.values()} == {"json"}


def _retail_planted_runs():
    from trace_envs.datasets import generate_planted

    return generate_planted(20, seed=0)
