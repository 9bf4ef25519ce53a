"""Tool errors in every shape a source writes them: one function decides (with its reason) for every reader, and one
gives the error as a sentence; on the real files the errors are the ones their sources mark."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.tool_errors import error_message, tool_error

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2-bench" / "results"
TELECOM = DATA / "tau2-bench" / "telecom-results" / "gpt-4.1_telecom.json"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")
AUTOPAY = "autopay is disabled on this account: enable it with enable_autopay first"


@pytest.mark.parametrize("reply,reason", [
    # JSON envelopes
    (json.dumps({"error": AUTOPAY}), 'a JSON "error"'),
    (json.dumps({"errors": [{"message": "bad id"}]}), 'a JSON "errors"'),
    (json.dumps({"status": "failed", "message": "card expired"}), 'a JSON "status" of "failed"'),
    (json.dumps({"status": "error", "detail": "x"}), 'a JSON "status" of "error"'),
    (json.dumps({"status": 409, "message": "call enable_autopay first"}), 'a JSON "status" of 409'),
    (json.dumps({"status_code": 503}), 'a JSON "status_code" of 503'),
    (json.dumps({"code": "404", "message": "no such order"}), 'a JSON "code" of "404"'),
    (json.dumps({"success": False, "reason": "limit reached"}), 'a JSON "success": false'),
    # ToolSandbox's exception lines
    ("ValueError: Cellular service is not enabled", "a ValueError exception"),
    ("PermissionError: contacts are read-only", "a PermissionError exception"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'phone'", "a KeyError exception"),
    # plain text with an error word or a status code at its start
    ("Error: Order not found", 'text opening with "Error"'),
    (f"ERROR 409: {AUTOPAY}", 'text opening with "ERROR 409"'),
    ("Failed to enable autopay: the card is expired", 'text opening with "Failed"'),
    ("404 Not Found", 'text opening with "404 Not"'),
    ("HTTP 500", 'text opening with "HTTP 500"'),
    ("not found", 'text opening with "not found"'),
    ("User not found", 'text opening with "User not found"'),
    ("Access denied", 'text opening with "Access denied"'),
    ("Permission denied: ask an admin", 'text opening with "Permission denied"'),
    ("Invalid order id #W1", 'text opening with "Invalid"'),
    ("Unable to reach the payment service", 'text opening with "Unable to"'),
    (f"Request failed (412): {AUTOPAY}", 'text opening with "Request failed (412):"'),
    (f"FAILED - {AUTOPAY}", 'text opening with "FAILED"'),
])
def test_every_error_shape_is_an_error_with_its_reason(reply, reason):
    assert tool_error(reply) == reason


@pytest.mark.parametrize("reply", [
    json.dumps({"message": "Line resumed"}),  # a message alone is an acknowledgement
    json.dumps({"status": "paid", "amount": 12.5}),
    json.dumps({"order_id": "#1", "status": "failed", "items": [], "total": 3, "user_id": "u"}),  # a record's status
    json.dumps({"error": None, "id": 3}),
    json.dumps({"ok": True}),
    json.dumps([{"status": "failed"}]),
    "Transfer successful", "available", "landed", "461.0", "400 passengers", "[]", "",
    "Speed test failed: No Connection",  # a device's report, read by a tool that worked
    "Your messaging app cannot send MMS messages", "No flights found for that date",
    "The user was not found in the old system, so a new profile was created and everything else went through fine.",
])
def test_successes_that_look_alike_are_not_errors(reply):
    assert tool_error(reply) is None


def test_a_source_flag_settles_it():
    assert tool_error("anything", flagged=True) == "flagged by the source"
    assert tool_error(None) is None


@pytest.mark.parametrize("reply,sentence", [
    (json.dumps({"error": AUTOPAY}), AUTOPAY),
    (f"ERROR 409: {AUTOPAY}", AUTOPAY),
    (f"Error: {AUTOPAY}", AUTOPAY),
    (json.dumps({"status": "failed", "message": "the card on file is expired"}), "the card on file is expired"),
    (json.dumps({"error": {"code": 409, "message": AUTOPAY}}), AUTOPAY),
    (json.dumps({"errors": [{"message": "bad id"}]}), "bad id"),
    (f"ValueError: {AUTOPAY}", AUTOPAY),
    ("Traceback (most recent call last):\n  File \"x.py\"\nPermissionError: contacts are read-only",
     "contacts are read-only"),
    ("HTTP 404 Not Found - order #W1 does not exist", "order #W1 does not exist"),
    ("Failed to enable autopay: the card is expired", "Failed to enable autopay: the card is expired"),
    ("Error: Non-delivered order cannot be exchanged", "Non-delivered order cannot be exchanged"),
    (f"Request failed (412): {AUTOPAY}", AUTOPAY),
    (f"FAILED - {AUTOPAY}", AUTOPAY),
])
def test_the_error_as_a_sentence_a_user_could_read(reply, sentence):
    assert error_message(reply) == sentence


def _jsonl(path: Path, content: str, error: bool | None = None) -> Path:
    tool = {"role": "tool", "tool_call_id": "c1", "name": "change_plan", "content": content}
    if error is not None:
        tool["error"] = error
    run = {"task_id": "1", "reward": 0.0, "messages": [
        {"role": "user", "content": "switch me to the green plan"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "change_plan", "arguments": '{"plan": "green"}'}}]},
        tool, {"role": "assistant", "content": "Sorry."}]}
    path.write_text(json.dumps(run) + "\n")
    return path


@pytest.mark.parametrize("content,error", [
    (f"ERROR 409: {AUTOPAY}", True), (json.dumps({"error": AUTOPAY}), True), ("ok", False),
    (json.dumps({"message": "plan changed"}), False),
])
def test_every_reader_asks_the_one_function(tmp_path, content, error):
    [run] = load_runs([_jsonl(tmp_path / "r.jsonl", content)]).runs
    call = run.tool_calls[0]
    assert call.error is error and (call.error_reason is not None) is error
    [flagged] = load_runs([_jsonl(tmp_path / "f.jsonl", "fine", error=True)]).runs
    assert flagged.tool_calls[0].error and flagged.tool_calls[0].error_reason == "flagged by the source"


@needs_data
def test_real_files_keep_the_errors_their_sources_mark():
    """tau-bench marks an error by a reply opening with "Error"; tau2 by its `error` flag. The error shares `inspect`
    prints stay what they were: every error found is one of those, and each of those is found."""
    tau = [c for r in load_runs([TAU]).runs for c in r.tool_calls]
    assert [c for c in tau if c.error] == [c for c in tau if (c.result or "").startswith("Error")]
    assert Counter(c.name for c in tau if c.error) == {
        "update_reservation_flights": 42, "book_reservation": 30, "update_reservation_baggages": 1}
    for path in [*sorted(TAU2.glob("*.json")), TELECOM]:
        doc = json.loads(path.read_text())
        flagged = sum(bool(m.get("error")) for s in doc["simulations"] for m in s["messages"] if m["role"] == "tool")
        calls = [c for r in load_runs([path]).runs for c in r.tool_calls]
        assert sum(c.error for c in calls) == flagged, path.name
        assert {c.error_reason for c in calls if c.error} <= {"flagged by the source"}
