"""The runtime: action parsing, error observations, scripted user, info keys, determinism, truncation."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import trace_envs  # noqa: F401  (registers the bundled envs)
from trace_envs.runtime import STOP, ScriptedUser, parse_action
from trace_envs.runtime.base import CHARSET

ENV_ID = "trace/airline_check_cabin_before_cancel"


@pytest.mark.parametrize(
    "action, names",
    [
        ('{"name": "get_x", "arguments": {"a": 1}}', ["get_x"]),
        ('{"name": "get_x", "arguments": "{\\"a\\": 1}"}', ["get_x"]),
        ('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]', ["a", "b"]),
        ('<tool_call>{"name": "a", "arguments": {}}</tool_call>', ["a"]),
        ('thinking... <tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b"}</tool_call>', ["a", "b"]),
        ('{"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}}', ["a"]),
        ('{"tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {}}}]}', ["a"]),
    ],
)
def test_parse_tool_call_forms(action, names):
    parsed = parse_action(action)
    assert parsed.error is None
    assert [c.name for c in parsed.calls] == names


def test_parse_text_and_malformed():
    assert parse_action("Hello, how can I help?").text == "Hello, how can I help?"
    assert parse_action('{"name": "a", "arguments": ').error.startswith("invalid tool call JSON")
    assert "missing" in parse_action('{"arguments": {}}').error
    assert "expected a JSON object" in parse_action('{"name": "a", "arguments": [1]}').error
    assert parse_action(b"\xff\xfe bytes").text.startswith("\ufffd")
    assert "too deeply" in parse_action("[" * 5000 + "]" * 5000).error


def test_reset_info_and_spaces():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for key in ("messages", "tools", "capability", "spec_hash", "system_prompt", "opening"):
        assert key in info
    assert info["messages"][0]["role"] == "system" and info["messages"][1] == {"role": "user", "content": obs}
    assert {t["function"]["name"] for t in info["tools"]} == {"get_reservation_details", "cancel_reservation"}
    assert info["capability"] == "airline_check_cabin_before_cancel"
    assert len(info["spec_hash"]) == 64
    assert set("héllo – “quoted” {json: [1]}") <= CHARSET


def test_same_seed_same_episode_and_different_seeds_differ():
    env = gym.make(ENV_ID)
    first = env.reset(seed=7)
    actions = env.unwrapped.oracle_actions()
    again = env.reset(seed=7)
    assert first[0] == again[0] and env.unwrapped.oracle_actions() == actions
    assert env.reset(seed=8)[0] != first[0] or env.unwrapped.oracle_actions() != actions


@pytest.mark.parametrize("env_id", [ENV_ID, "trace/helpdesk_enable_autopay_then_retry", "trace/retail_tell_order_status"])
def test_a_seed_replayed_on_one_env_is_the_episode_a_fresh_env_gives(env_id):
    """A seeded scenario is built once per env and kept: the episode after it (the writes' changes to the world, the
    random draws after the build, the reward) is the one a fresh env plays, however often the seed is replayed."""

    def episode(env, seed):
        obs, _ = env.reset(seed=seed)
        unwrapped = env.unwrapped
        world = json.dumps(unwrapped.scenario.state, sort_keys=True, default=str)
        draw = unwrapped.np_random.random()
        steps = [env.step(a)[:4] for a in unwrapped.oracle_actions()]
        return obs, world, draw, steps, json.dumps(unwrapped.scenario.state, sort_keys=True, default=str)

    reused = gym.make(env_id)
    for seed in (3, 4, 3, 3, 4):
        fresh = episode(gym.make(env_id), seed)
        played = episode(reused, seed)
        assert played == fresh
        assert played[3][-1][1] == 1.0  # the oracle's last step pays 1.0 every time
    assert fresh[1] != fresh[4] or env_id == "trace/retail_tell_order_status"  # the writes changed that world


def test_malformed_call_and_unknown_tool_give_error_observations():
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step('{"name": "cancel_reservation", "arguments": ')
    assert json.loads(obs)["error"].startswith("invalid tool call JSON") and not terminated
    obs, *_ = env.step('{"name": "drop_database", "arguments": {}}')
    assert "unknown tool" in json.loads(obs)["error"]
    obs, *_ = env.step('{"name": "get_reservation_details", "arguments": {"reservation_id": 5}}')
    assert "must be string" in json.loads(obs)["error"]
    obs, *_ = env.step('{"name": "get_reservation_details", "arguments": {}}')
    assert "missing required" in json.loads(obs)["error"]
    obs, *_ = env.step('{"name": "get_reservation_details", "arguments": {"reservation_id": "NOPE00"}}')
    assert "not found" in json.loads(obs)["error"]


def test_oracle_episode_messages_are_openai_form_and_reward_terminal():
    env = gym.make(ENV_ID)
    env.reset(seed=1)
    rewards = []
    for action in env.unwrapped.oracle_actions():
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
    assert terminated and rewards[-1] == 1.0 and all(r == 0.0 for r in rewards[:-1])
    assert info["reward_breakdown"] and all(v == 1.0 for v in info["reward_breakdown"].values())
    assert info["success"] is True
    roles = [m["role"] for m in info["messages"]]
    assert roles[:3] == ["system", "user", "assistant"] and "tool" in roles
    call_msg = next(m for m in info["messages"] if m.get("tool_calls"))
    fn = call_msg["tool_calls"][0]["function"]
    assert fn["name"] == "get_reservation_details" and isinstance(fn["arguments"], str)
    tool_msg = next(m for m in info["messages"] if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == call_msg["tool_calls"][0]["id"]
    assert STOP in info["messages"][-1]["content"]


def test_max_turns_truncates_with_terminal_score():
    env = gym.make(ENV_ID, max_turns=3)
    env.reset(seed=0)
    out = None
    for _ in range(3):
        out = env.step('{"name": "get_reservation_details", "arguments": {"reservation_id": "X"}}')
    _, reward, terminated, truncated, info = out
    assert truncated and not terminated and reward == 0.0 and "reward_breakdown" in info


def test_reset_builds_the_user_from_the_scenario_and_steps_report_calls_to_it():
    """The user gets the scenario's facts and requests (never its bindings); every executed call is reported to it."""
    env = gym.make(ENV_ID)
    env.reset(seed=1)
    base = env.unwrapped
    assert base.user.requests == base.scenario.requests and base.user.facts == base.scenario.facts
    target = base.scenario.requests[0].target
    assert base.user.statuses == ["pending"]
    env.step(json.dumps({"name": "cancel_reservation", "arguments": {"reservation_id": target}}))
    assert base.user.statuses == ["done"]
    _, _, terminated, _, info = env.step("Your reservation is cancelled.")
    assert terminated and STOP in info["messages"][-1]["content"]
    assert ScriptedUser().reply("All done.") == (f"Thank you, that's all I needed. {STOP}", True)


def test_step_never_raises_on_odd_actions():
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    for action in ["", " ", "\x00\x01", "{", "[]", "[1,2]", "null", '{"name": 5}', "<tool_call>", "x" * 300_000]:
        obs, *_ = env.step(action)
        assert isinstance(obs, str)


def test_deeply_nested_arguments_are_an_error_on_every_path():
    """Parsed actions and direct `call_tool` (the TRL bridge's path) both refuse arguments nested past the bound."""
    env = gym.make(ENV_ID)
    env.reset(seed=0)
    deep: object = "x"
    for _ in range(200):
        deep = [deep]
    result = json.loads(env.unwrapped.call_tool("get_reservation_details", {"reservation_id": deep}))
    assert "nested more than" in result["error"]
    obs, *_ = env.step(json.dumps({"name": "get_reservation_details", "arguments": {"reservation_id": deep}}))
    assert "nested more than" in json.loads(obs)["error"]
    assert env.unwrapped.score().score == 0.0


@pytest.mark.parametrize("value", [
    {"reservation_id": "ABC123", "total": 12.5, "ok": True, "none": None, "nested": [{"a": [1, 2.0, "x"]}]},
    ["café", "日本", "\u2028", "tab\there", 'quote"s'],
    {"nan": float("nan"), "inf": float("inf"), "big": 10**30, "neg": -0.0},
    "just a string", 3, None, [],
])
def test_the_fast_encoder_writes_what_json_dumps_writes(value):
    from trace_envs.jsontext import dumps

    assert dumps(value) == json.dumps(value)


@pytest.mark.parametrize("text", [
    '{"name": "get_order_details", "arguments": {"order_id": "#W1"}}', '[1, 2.5, "x", null, true]', '"a"', "3",
    "NaN", '{"a": "caf\\u00e9", "b": -0.0, "c": 1e400}', ' {"a": 1}', '{"a": 1} ', '{"a": 1}\n',
])
def test_the_fast_parser_reads_what_json_loads_reads(text):
    from trace_envs.jsontext import loads

    want = json.loads(text)
    assert loads(text) == want or (want != want and loads(text) != loads(text))  # NaN is not equal to itself
    assert type(loads(text)) is type(want)


@pytest.mark.parametrize("text", ["", "{", '{"a": 1} x', '{"a": 1}{}', "nope", '{"a": 01}', "\ufeff{}", '{"a" 1}',
                                  '["\x01"]'])
def test_the_fast_parser_refuses_what_json_loads_refuses_with_its_message(text):
    from trace_envs.jsontext import loads

    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        loads(text)
    assert str(got.value) == str(want.value)


def test_the_fast_parser_overflows_as_json_loads_does():
    from trace_envs.jsontext import loads

    with pytest.raises(RecursionError):
        loads("[" * 100_000 + "]" * 100_000)


def test_the_fast_encoder_refuses_what_json_refuses():
    from trace_envs.jsontext import dumps

    with pytest.raises(TypeError):
        dumps({"a": {1, 2}})
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises((ValueError, RecursionError)):
        dumps(cyclic)


def test_a_call_step_built_fast_is_the_validated_step():
    import pickle

    from trace_envs.checks.trace import TraceStep

    args, result = {"order_id": "#W1"}, {"status": "pending"}
    fast = TraceStep.of_call("get_order_details", args, result, False)
    slow = TraceStep(kind="call", name="get_order_details", arguments=args, result=result, error=False)
    assert fast == slow and repr(fast) == repr(slow)
    assert fast.model_dump() == slow.model_dump() and fast.model_fields_set == slow.model_fields_set
    assert pickle.loads(pickle.dumps(fast)) == slow and fast.model_copy(update={"error": True}).error is True
    for kind in ("say", "user"):
        fast, slow = TraceStep.of_text(kind, "Hello."), TraceStep(kind=kind, text="Hello.")
        assert fast == slow and repr(fast) == repr(slow) and fast.model_fields_set == slow.model_fields_set


def test_a_planted_run_built_fast_is_the_validated_run():
    from trace_envs.datasets.planted import iter_planted
    from trace_envs.trajectories.models import Run

    for run in iter_planted(20, seed=3):
        again = Run.model_validate(run.model_dump())
        assert run == again and run.model_dump_json() == again.model_dump_json()
        assert all(type(c).__name__ == "ToolCall" for c in run.tool_calls)


@pytest.mark.parametrize("schema, value, ok", [
    ({"type": "integer"}, 3, True), ({"type": "integer"}, True, False), ({"type": "number"}, False, False),
    ({"type": ["boolean", "integer"]}, True, True), ({"type": "boolean"}, 1, False), ({"type": "string"}, "x", True),
    ({"type": ["string", "null"]}, None, True), ({"type": "array"}, {}, False), ({}, object(), True),
    ({"type": "a-type-no-schema-has"}, True, True),
])
def test_argument_types_as_json_schema_reads_them(schema, value, ok):
    from trace_envs.runtime import check_arguments
    from trace_envs.spec.model import ToolSpec

    tool = ToolSpec(name="set_x", description="Set x.", kind="write",
                    parameters={"type": "object", "properties": {"x": schema}, "required": ["x"]})
    assert (check_arguments(tool, {"x": value}) is None) is ok


def test_an_argument_error_names_what_is_missing_then_what_is_unknown_then_a_wrong_type():
    from trace_envs.runtime import check_arguments
    from trace_envs.spec.model import ToolSpec

    tool = ToolSpec(name="set_x", description="Set x.", kind="write",
                    parameters={"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
                                "required": ["x"]})
    assert check_arguments(tool, {"y": 1, "z": 2}) == "missing required argument(s) for set_x: x"
    # the wrong type comes first in the arguments, the unknown names are still what the error gives
    assert check_arguments(tool, {"x": "1", "z": 2, "w": 3}) == "unknown argument(s) for set_x: z, w"
    assert check_arguments(tool, {"x": 1, "y": 2}) == "argument 'y' of set_x must be string"
    assert check_arguments(tool, {"x": 1, "y": "2"}) is None


def test_records_keyed_by_their_owners_id_are_each_another_users_own():
    """A read keyed by the user's own id (a client's login status under `clientId`, held-out randomizer seed 104)
    learns an owner invariant on that key; a scenario's distractor records then carry fresh ids, each another user's
    own record, and were refused as "records of several owners", so the hand-off env mined there never published.
    An owner field apart from the key must still agree."""
    from pathlib import Path

    import numpy as np

    from trace_envs.runtime.world import RecordSource
    from trace_envs.spec.io import load_specs
    from trace_envs.trajectories.invariants import Invariant

    root = Path(__file__).resolve().parents[1]
    spec = load_specs(root / "examples" / "specs" / "airline_check_cabin_before_cancel.json")[0]
    keyed = spec.model_copy(update={"invariants": [*spec.invariants, Invariant(kind="owner", path="reservation_id")]})
    source = RecordSource(keyed, "get_reservation_details", "reservation_id", np.random.default_rng(0))
    records = source.records(3)
    assert len({r["reservation_id"] for r in records}) == 3
    assert len({r["user_id"] for r in records}) == 1  # the owner field apart from the key: the scenario's user


def test_a_copied_record_shares_nothing_that_can_change():
    """Scenarios copy the spec's real records (`copy_record`): a write to the copy, however deep, leaves the spec's
    record as it was; only the strings and numbers, which cannot change, are shared."""
    from trace_envs.runtime.world import copy_record

    real = {"id": "W1", "items": [{"price": 12.5, "options": {"size": "8"}}], "address": {"city": "Austin"},
            "tags": [["a"]], "paid": True, "note": None}
    copy = copy_record(real)
    assert copy == real
    copy["items"][0]["options"]["size"] = "9"
    copy["items"].append({})
    copy["address"]["city"] = "Dallas"
    copy["tags"][0].append("b")
    assert real == {"id": "W1", "items": [{"price": 12.5, "options": {"size": "8"}}], "address": {"city": "Austin"},
                    "tags": [["a"]], "paid": True, "note": None}
