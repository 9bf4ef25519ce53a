"""Apple ToolSandbox run folders: `inspect` on a folder of run folders, on one file of a run alone, the runs' outcomes,
tools, errors and extras, and tool calls and results read as data only (tests/data/toolsandbox/build_fixture.py says
where each shape comes from)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from trace_envs.trajectories.formats.python_text import NotACall, exception_in, parse_tool_call, read_result
from trace_envs.trajectories.loaders import load_runs

FIXTURE = Path(__file__).resolve().parent / "data" / "toolsandbox"
RUN_A = FIXTURE / "agent_gpt-4o-2024-05-13_user_gpt-4o-2024-05-13_06_01_2024_10_00_00"
RUN_B = FIXTURE / "agent_gpt-3.5-turbo-0125_user_gpt-4o-2024-05-13_06_02_2024_11_30_00"
SEND = "send_message_with_contact_content_cellular_off_multiple_user_turn"
REMOVE = "remove_contact_by_phone_multiple_user_turn_3_distraction_tools"
CITY = "find_current_city_insufficient_information"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    from trace_envs.cli import _load_commands, app

    _load_commands()
    return app


def inspect(app, *args):
    return CliRunner().invoke(app, ["inspect", *map(str, args)])


@pytest.fixture(scope="module")
def runs():
    return {(r.meta["run_folder"][:12], r.task_id): r for r in load_runs([FIXTURE]).runs}


def test_inspect_folder_of_run_folders(app):
    res = inspect(app, FIXTURE, "--json")
    assert res.exit_code == 0, res.output
    (report,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert {k: report[k] for k in ("domain", "runs", "passed", "failed", "tasks", "mixed_tasks", "sources")} == {
        "domain": "toolsandbox", "runs": 6, "passed": 3, "failed": 3, "tasks": 3, "mixed_tasks": 3,
        "sources": {"toolsandbox": 6}}
    assert report["files"] == [str(RUN_B), str(RUN_A)]
    assert {n: (t["calls"], t["kind"], t["error_rate"]) for n, t in report["tools"].items()} == {
        "search_contacts": (4, "read", 0.0),
        "send_message_with_phone_number": (3, "write", 0.6667),
        "remove_contact": (1, "write", 0.0),
        "search_lat_lon": (1, "read", 0.0),
        "set_cellular_service_status": (1, "write", 0.0),
    }
    text = inspect(app, FIXTURE).stdout
    assert "runs: 6  passed: 3  failed: 3" in text and "tasks: 3  mixed outcomes: 3" in text


def test_outcomes_trials_and_variants(runs):
    assert {k: (r.reward, r.success, r.trial) for k, r in runs.items()} == {
        ("agent_gpt-4o", SEND): (1.0, True, 1), ("agent_gpt-4o", REMOVE): (1.0, True, 1),
        ("agent_gpt-4o", CITY): (1.0, True, 1),
        ("agent_gpt-3.", SEND): (0.5, False, 0), ("agent_gpt-3.", REMOVE): (0.0, False, 0),
        ("agent_gpt-3.", CITY): (0.0, False, 0),
    }
    r = runs[("agent_gpt-4o", REMOVE)]
    assert (r.meta["base_scenario"], r.meta["task_variant"]) == ("remove_contact_by_phone_multiple_user_turn",
                                                                  "3_distraction_tools")
    assert r.meta["categories"] == ["MULTIPLE_TOOL_CALL", "SINGLE_USER_TURN", "THREE_DISTRACTION_TOOLS"]
    assert (r.meta["agent_model"], r.meta["user_model"]) == ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13")
    assert runs[("agent_gpt-3.", SEND)].meta["agent_model"] == "gpt-3.5-turbo-0125"
    assert runs[("agent_gpt-4o", SEND)].meta["task_variant"] == ""
    assert r.policy.startswith("Don't make assumptions about what values to plug into functions.")


def test_tool_results_are_literals_and_exceptions_are_errors(runs):
    calls = runs[("agent_gpt-4o", SEND)].agent_calls
    assert [(c.name, c.error) for c in calls] == [
        ("search_contacts", False), ("send_message_with_phone_number", True),
        ("set_cellular_service_status", False), ("send_message_with_phone_number", False)]
    assert json.loads(calls[0].result)[0]["name"] == "Fredrik Thordendal"
    assert calls[0].arguments == {"name": "Fredrik Thordendal"}
    assert calls[1].result == "ConnectionError: Cellular service is not enabled"
    assert calls[2].result == "null"
    assert json.loads(calls[3].result) == "f1b2c3d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
    assert runs[("agent_gpt-4o", SEND)].meta["tool_exceptions"] == [
        {"call_id": "call_9HpQk3", "tool": "send_message_with_phone_number", "type": "ConnectionError",
         "message": "Cellular service is not enabled"}]
    # the agent's own messages keep the text it saw
    tool_msgs = [m["content"] for m in runs[("agent_gpt-4o", SEND)].messages if m["role"] == "tool"]
    assert tool_msgs[2] == "None"


def test_denied_tools_and_schemas(runs):
    city = runs[("agent_gpt-3.", CITY)]
    assert city.meta["denied_tools"] == ["search_location_around_lat_lon", "search_weather_around_lat_lon",
                                         "get_current_location"]
    assert city.meta["allowed_tools"] == ["end_conversation", "search_lat_lon"]
    assert {t["function"]["name"]: t.get("x-kind") for t in city.tools} == {"end_conversation": "other",
                                                                           "search_lat_lon": "read"}
    assert city.agent_calls[0].arguments == {"latitude": 37.7749, "longitude": -122.4194}


def test_scenario_that_raised_loads_from_its_execution_context(runs):
    r = runs[("agent_gpt-3.", REMOVE)]
    assert not (RUN_B / "trajectories" / REMOVE / "conversation.json").exists()
    assert r.meta["exception_type"] == "APITimeoutError"
    assert r.meta["scenario_error"] == "openai.APITimeoutError: Request timed out."
    assert [(c.name, c.arguments) for c in r.agent_calls] == [("search_contacts", {"phone_number": "+12453344098"})]
    assert json.loads(r.agent_calls[0].result)[0]["person_id"] == "6a4c3f37-0d1b-5b2a-9c55-1f0d2b1e8e41"


def test_conversation_and_execution_context_give_the_same_calls(tmp_path):
    """The SANDBOX log alone (code strings) reads as conversation.json does (OpenAI tool calls)."""
    run = tmp_path / RUN_A.name
    shutil.copytree(RUN_A, run)
    before = {r.task_id: r for r in load_runs([run]).runs}
    for conv in run.glob("trajectories/*/conversation.json"):
        conv.unlink()
    after = {r.task_id: r for r in load_runs([run]).runs}
    for name in (SEND, REMOVE, CITY):
        a, b = before[name], after[name]
        assert [(c.id, c.name, c.arguments, c.result, c.error) for c in a.tool_calls] == [
            (c.id, c.name, c.arguments, c.result, c.error) for c in b.tool_calls]
        assert [m["role"] for m in a.messages] == [m["role"] for m in b.messages]


def test_summary_alone_loads_its_run_folder(app):
    res = inspect(app, RUN_A / "result_summary.json", "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert (report["runs"], report["passed"], report["files"]) == (3, 3, [str(RUN_A / "result_summary.json")])


def test_summary_without_trajectories_is_a_clear_error(app, tmp_path):
    shutil.copy(RUN_A / "result_summary.json", tmp_path / "result_summary.json")
    res = inspect(app, tmp_path / "result_summary.json")
    assert res.exit_code == 2
    assert res.stderr.strip() == (
        f"error: {tmp_path / 'result_summary.json'}: a ToolSandbox result_summary.json holds scores but no "
        "conversations, and there is no trajectories/ folder beside it; pass the whole run folder "
        "(agent_<model>_user_<model>_<time>/)")


def test_conversation_alone(app, tmp_path):
    conv = RUN_B / "trajectories" / SEND / "conversation.json"
    res = inspect(app, conv, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert (report["runs"], report["passed"], list(report["tools"])) == (
        1, 0, ["search_contacts", "send_message_with_phone_number"])
    stray = tmp_path / "conversation.json"
    shutil.copy(conv, stray)
    res = inspect(app, stray)
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {stray}: a list of chat messages with no outcome beside it; a ToolSandbox "
                                 "conversation.json is read from its run folder")


def test_bad_summary_entry_is_located(app, tmp_path):
    run = tmp_path / RUN_A.name
    shutil.copytree(RUN_A, run)
    summary = json.loads((run / "result_summary.json").read_text())
    summary["per_scenario_results"][1]["similarity"] = "1.0"
    (run / "result_summary.json").write_text(json.dumps(summary, indent=4))
    res = inspect(app, tmp_path)
    assert res.exit_code == 2
    assert res.stderr.strip() == (f"error: {run}: result_summary.json: per_scenario_results[1] (scenario {REMOVE}): "
                                  'expected "similarity" to be a number, got a string')


# --------------------------------------------------------------------------------------------------------------------
# Python text as data


@pytest.mark.parametrize(
    "code, expected",
    [
        ("search_contacts(name='Fredrik')", ("search_contacts", {"name": "Fredrik"})),
        ("set_wifi_status(True)", ("set_wifi_status", {"arg_0": True})),
        ("call_1_parameters = {'phone_number': '+1245', 'content': 'hi'}\n"
         "call_1_response = send_message_with_phone_number(**call_1_parameters)\nprint(repr(call_1_response))",
         ("send_message_with_phone_number", {"phone_number": "+1245", "content": "hi"})),
        ("end_conversation()", ("end_conversation", {})),
    ],
)
def test_tool_call_code_is_parsed(code, expected):
    assert parse_tool_call(code) == expected


@pytest.mark.parametrize(
    "code, why",
    [
        ("__import__('os').system('touch PWNED')", "the called thing is not a plain tool name"),
        ("search_contacts(name=open('/etc/passwd').read())", "argument 'name' is not a literal"),
        ("import os\nos.system('touch PWNED')", "not a single tool call"),
        ("x = 1", "not a single tool call"),
        ("search_contacts(**kwargs)", "**arguments are not literals"),
        ("search_contacts(*names)", "*arguments are not literals"),
        ("search_contacts(name=", "not valid Python (SyntaxError)"),
        ("p = {'a': 1}\nr = tool(**p)\nos.system('x')", "the third line is not print(repr(<response>))"),
        ("p = {'a': f()}\nr = tool(**p)\nprint(repr(r))", "the parameters is not a literal"),
    ],
)
def test_other_code_is_refused_and_never_run(code, why, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotACall) as info:
        parse_tool_call(code)
    assert str(info.value) == why
    assert not (tmp_path / "PWNED").exists()


def test_unreadable_code_in_a_log_is_reported_not_run(tmp_path, monkeypatch, caplog):
    run = tmp_path / RUN_B.name
    shutil.copytree(RUN_B, run)
    ctx_path = run / "trajectories" / REMOVE / "execution_context.json"
    ctx = json.loads(ctx_path.read_text())
    row = next(r for r in ctx["_dbs"]["SANDBOX"] if r["sender"] == "AGENT" and r["recipient"] == "EXECUTION_ENVIRONMENT")
    row["content"] = "import os\nos.system('touch PWNED')"
    ctx_path.write_text(json.dumps(ctx))
    monkeypatch.chdir(tmp_path)
    (r,) = [r for r in load_runs([run]).runs if r.task_id == REMOVE]
    assert r.agent_calls == []
    assert r.meta["unread_tool_calls"][0]["why"] == "not a single tool call"
    assert not (tmp_path / "PWNED").exists()
    assert caplog.messages == [f"warning: {run}: trajectories/{REMOVE}/execution_context.json: _dbs.SANDBOX row 5: tool call "
                               "not read (not a single tool call); it was not run"]


@pytest.mark.parametrize(
    "text, result, exc",
    [
        ("[{'name': 'Fredrik', 'is_self': False}]", '[{"name": "Fredrik", "is_self": false}]', None),
        ("True", "true", None),
        ("None", "null", None),
        ("(1.5, 2)", "[1.5, 2]", None),
        ("'ConnectionError: not an error, a string'", '"ConnectionError: not an error, a string"', None),
        ("PermissionError: Location service is not enabled.", "PermissionError: Location service is not enabled.",
         ("PermissionError", "Location service is not enabled.")),
        ("polars.exceptions.NoDataError: No db entry matching person_id='x' found",
         "polars.exceptions.NoDataError: No db entry matching person_id='x' found",
         ("NoDataError", "No db entry matching person_id='x' found")),
        ("Traceback (most recent call last):\n  File \"<input>\", line 1\nSyntaxError: invalid syntax",
         "Traceback (most recent call last):\n  File \"<input>\", line 1\nSyntaxError: invalid syntax",
         ("SyntaxError", "invalid syntax")),
        ("Error: The given code was incomplete and could not be executed: 'if True:'",
         "Error: The given code was incomplete and could not be executed: 'if True:'",
         ("Error", "The given code was incomplete and could not be executed: 'if True:'")),
        ("b'bytes'", "b'bytes'", None),
        ("Sent to Fredrik", "Sent to Fredrik", None),
    ],
)
def test_results_are_read_as_literals(text, result, exc):
    assert read_result(text) == (result, exc)


def test_exception_line_needs_an_exception_name():
    assert exception_in("Note: cellular is off") is None
    assert exception_in("ValueError") == ("ValueError", "")
