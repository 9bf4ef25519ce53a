"""DomainProfile: tool schemas, result shapes, read/write kinds (names, state changes, definitions, overrides)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.models import Run, ToolCall
from trace_envs.trajectories.profile import (
    DomainProfile,
    OverridesError,
    build_profile,
    describe_tool,
    infer_kind_from_name,
    load_overrides,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2 = DATA / "tau2-bench" / "results"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


@pytest.fixture(scope="module")
def airline() -> DomainProfile:
    return build_profile(load_runs([TAU]).runs)


@needs_data
def test_airline_kinds_without_overrides(airline):
    kinds = airline.kinds
    for name in ("cancel_reservation", "book_reservation", "update_reservation_flights"):
        assert kinds[name] == "write", name
    for name in ("get_user_details", "get_reservation_details", "search_direct_flight"):
        assert kinds[name] == "read", name
    assert kinds["transfer_to_human_agents"] == "other"
    assert kinds["think"] == "other"
    assert all(t.kind_source == "inferred" for t in airline.tools.values())


@needs_data
def test_airline_profile_shapes(airline):
    assert airline.domain == "airline" and airline.runs == 200
    assert airline.policy.startswith("# Airline Agent Policy")
    grd = airline.tools["get_reservation_details"]
    assert grd.calls == 377
    assert grd.parameters == {
        "type": "object",
        "properties": {"reservation_id": {"type": "string"}},
        "required": ["reservation_id"],
    }
    assert 1 <= len(grd.examples["reservation_id"]) <= 3
    assert len(set(grd.examples["reservation_id"])) == len(grd.examples["reservation_id"])
    assert {"reservation_id", "flights", "passengers", "cabin"} <= set(grd.result_keys)
    assert isinstance(grd.result_example, dict) and len(grd.result_example["flights"]) <= 3
    book = airline.tools["book_reservation"]
    assert book.parameters["properties"]["flights"] == {"type": "array"}
    assert book.parameters["properties"]["total_baggages"] == {"type": "integer"}
    assert 0 < book.error_rate < 1
    # list results: keys of the items (one-stop results are pairs of flights)
    assert "flight_number" in airline.tools["search_direct_flight"].result_keys
    assert "flight_number" in airline.tools["search_onestop_flight"].result_keys
    # the profile round-trips through JSON
    again = DomainProfile.model_validate_json(airline.model_dump_json())
    assert again.kinds == airline.kinds


@needs_data
def test_tau2_profiles():
    retail = build_profile(load_runs([TAU2 / "gpt-4.1_retail.json"]).runs)
    assert retail.domain == "retail"
    assert retail.policy.startswith("# Retail agent policy")
    assert retail.kinds["get_order_details"] == "read"
    assert retail.kinds["find_user_id_by_name_zip"] == "read"
    for name in (
        "cancel_pending_order",
        "modify_pending_order_items",
        "exchange_delivered_order_items",
        "return_delivered_order_items",
    ):
        assert retail.kinds[name] == "write"


def _call(i, name, args, result, requestor="agent", error=False):
    return ToolCall(
        id=f"c{i}", name=name, arguments=args, result=result, requestor=requestor, error=error, message_index=i
    )


def _run(calls, run_id="r", tools=None, policy="P"):
    return Run(
        run_id=run_id,
        source="planted",
        task_id=run_id,
        messages=[{"role": "user", "content": "x"}],
        tool_calls=calls,
        reward=1.0,
        success=True,
        policy=policy,
        tools=tools,
    )


def test_state_change_evidence_for_opaque_names():
    before = json.dumps({"id": 1, "status": "open"})
    after = json.dumps({"id": 1, "status": "closed"})
    run = _run(
        [
            _call(0, "get_ticket", {"id": 1}, before),
            _call(1, "frobnicate_ticket", {"id": 1}, "ok"),
            _call(2, "get_ticket", {"id": 1}, after),
            _call(3, "ponder", {"q": "x"}, "hmm"),
            _call(4, "get_ticket", {"id": 1}, after),
            _call(5, "mystery", {}, "?"),
        ]
    )
    prof = build_profile([run])
    assert prof.tools["frobnicate_ticket"].kind == "write"
    assert prof.tools["ponder"].kind == "read"  # seen between identical reads, no change
    assert prof.tools["mystery"].kind == "other"  # no evidence at all
    assert prof.domain == "custom"


def test_user_calls_not_counted_and_schema_types():
    run = _run(
        [
            _call(0, "toggle_data", {}, "ok", requestor="user"),
            _call(1, "get_line", {"n": 1, "opt": "a"}, json.dumps([{"a": 1}, {"b": 2}])),
            _call(2, "get_line", {"n": 2.5}, "Error: nope", error=True),
            _call(3, "get_line", {"n": None}, "plain text"),
        ]
    )
    prof = build_profile([run])
    assert "toggle_data" not in prof.tools
    t = prof.tools["get_line"]
    assert t.calls == 3 and t.error_rate == pytest.approx(1 / 3, abs=1e-3)
    assert t.parameters["properties"]["n"]["type"] == ["null", "number"]
    assert t.parameters["required"] == ["n"]
    assert t.examples["n"] == [1, 2.5, None]
    assert t.result_keys == ["a", "b"] and t.result_example == [{"a": 1}, {"b": 2}]


def test_definitions_and_overrides(tmp_path):
    tools = [
        {
            "type": "function",
            "function": {"name": "zap", "description": "Zaps.", "annotations": {"readOnlyHint": False}},
        },
        {"type": "function", "function": {"name": "get_a", "description": "Reads a.", "parameters": {}}},
    ]
    run = _run([_call(0, "zap", {}, "1"), _call(1, "get_a", {}, "2"), _call(2, "think", {}, "")], tools=tools)
    prof = build_profile([run])
    assert (prof.tools["zap"].kind, prof.tools["zap"].kind_source) == ("write", "definition")
    # the description says what get_a does: the definition speaks before the name
    assert (prof.tools["get_a"].kind, prof.tools["get_a"].kind_source) == ("read", "definition")
    assert prof.tools["zap"].description == "Zaps."
    prof = build_profile([run], {"think": "write"})
    assert (prof.tools["think"].kind, prof.tools["think"].kind_source) == ("write", "override")
    f = tmp_path / "kinds.yaml"
    f.write_text("kinds:\n  zap: read\n")
    assert load_overrides(f) == {"zap": "read"}
    assert build_profile([run], f).tools["zap"].kind_source == "override"
    g = tmp_path / "kinds.json"
    g.write_text('{"get_a": "WRITE"}')
    assert load_overrides(g) == {"get_a": "write"}
    g.write_text('{"get_a": "delete"}')
    with pytest.raises(OverridesError, match="get_a"):
        load_overrides(g)
    with pytest.raises(OverridesError):
        load_overrides(tmp_path / "missing.json")


@needs_data
def test_tools_without_definitions_get_a_sentence(airline):
    """tau-bench and tau2 files carry no tool definitions: each tool's description is built from its name, its
    arguments (required first, with types) and its kind, never left empty."""
    assert all(t.description and t.description_source == "generated" for t in airline.tools.values())
    assert airline.tools["cancel_reservation"].description == (
        "Cancel reservation, given reservation_id (string). It changes the records.")
    assert airline.tools["search_direct_flight"].description == (
        "Search direct flight, given origin (string), destination (string) and date (string). It only reads; "
        "nothing changes.")
    assert airline.tools["list_all_airports"].description == "List all airports, with no arguments. It only reads; nothing changes."
    assert describe_tool("modify_pending_order_address", {
        "properties": {"order_id": {"type": "string"}, "zip": {"type": ["string", "null"]}}, "required": ["order_id"]
    }, "write") == ("Modify pending order address, given order_id (string) and optionally zip (string or null). "
                    "It changes the records.")


def test_a_definitions_description_is_kept():
    tools = [{"type": "function", "function": {"name": "get_a", "description": "Reads a.", "parameters": {}}},
             {"type": "function", "function": {"name": "get_b", "description": "  ", "parameters": {}}}]
    prof = build_profile([_run([_call(0, "get_a", {}, "1"), _call(1, "get_b", {"x": 1}, "2")], tools=tools)])
    assert (prof.tools["get_a"].description, prof.tools["get_a"].description_source) == ("Reads a.", "definition")
    assert (prof.tools["get_b"].description, prof.tools["get_b"].description_source) == (
        "Get b, given x (integer). It only reads; nothing changes.", "generated")


@needs_data
def test_a_mined_tau_bench_env_shows_tool_descriptions(tmp_path):
    """End to end: a spec mined from the tau-bench file generates an env whose tool schemas (what an agent is shown)
    carry the profile's descriptions."""
    import gymnasium as gym

    from trace_envs.generate.publish import generate_one
    from trace_envs.mining.pipeline import MineOptions, mine
    from trace_envs.registry import make_env

    runs = load_runs([TAU]).runs
    result = mine(runs, options=MineOptions(check_publish=False))  # the one env below is validated by generate_one
    spec = next(c for c in result.capabilities if c.name == "no_unwarranted_cancel_reservation")
    assert all(t.description for t in spec.tools)
    assert generate_one(spec, tmp_path, seeds=5).published
    env = make_env(str(tmp_path / spec.name / "env.py"))
    _, info = env.reset(seed=0)
    shown = {t["function"]["name"]: t["function"]["description"] for t in info["tools"]}
    assert shown["cancel_reservation"] == "Cancel reservation, given reservation_id (string). It changes the records."
    assert all(shown.values()), shown
    assert isinstance(env, gym.Env)


@pytest.mark.parametrize(
    "name,kind",
    [
        ("get_user", "read"),
        ("searchFlights", "read"),
        ("list_all_airports", "read"),
        ("check_status_bar", "read"),
        ("cancel_reservation", "write"),
        ("book_reservation", "write"),
        ("send_certificate", "write"),
        ("return_delivered_order_items", "write"),
        ("set_apn", "write"),
        ("transfer_to_human_agents", "other"),
        ("calculate", "other"),
        ("think", "other"),
        ("user_lookup", "read"),
        ("frobnicate", None),
    ],
)
def test_name_heuristics(name, kind):
    assert infer_kind_from_name(name) == kind
