"""The TRL bridge: a registered env as TRL's `environment_factory` (tools from the target's schemas, seeded reset,
the check as reward), the dataset builder, and the user channel."""

from __future__ import annotations

import inspect
import json
import os
from typing import Any, Literal, Optional

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

pytest.importorskip("trl")
gym = pytest.importorskip("gymnasium")

import trace_envs  # noqa: E402,F401
from _doubles import TOY_ENV_ID, register_toy  # noqa: E402
from trace_envs.integrations.trl import (  # noqa: E402
    BRIDGE_NOTE,
    USER_TOOL,
    TraceBridge,
    bridge_class,
    bridge_tool_schemas,
    bridge_tools,
    build_dataset,
    build_multi_dataset,
    make_env_factories,
    oracle_conversation,
    reward_from_env,
    schema_annotation,
)

register_toy()
GENERATED = sorted(k for k in gym.registry if k.startswith("trace/"))
ALL_ENVS = [TOY_ENV_ID, *GENERATED]


def trl_tool_names(instance: Any) -> set[str]:
    """What TRL's GRPOTrainer exposes, computed the way it does (grpo_trainer.py)."""
    return {
        n
        for n, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if n not in ("reset", "get_reward") and not n.startswith("_")
    }


@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_bridge_exposes_the_target_tools_with_their_schemas(env_id: str) -> None:
    cls = bridge_class(env_id)
    assert not issubclass(cls, gym.Env)
    inst = cls()
    specs = {t.name: t for t in inst.base.tool_specs}
    assert trl_tool_names(inst) == set(specs) | {USER_TOOL}
    for schema in bridge_tool_schemas(inst):
        fn = schema["function"]
        if fn["name"] == USER_TOOL:
            assert fn["parameters"]["required"] == ["message"]
            continue
        spec = specs[fn["name"]]
        assert set(fn["parameters"]["properties"]) == set(spec.properties)
        assert sorted(fn["parameters"].get("required", [])) == sorted(spec.required)
        for arg, s in spec.properties.items():
            got = fn["parameters"]["properties"][arg]
            if "type" in s and isinstance(s["type"], str):
                assert got["type"] == s["type"], (arg, got, s)
            if "enum" in s:
                assert got["enum"] == s["enum"]
            assert got["description"]
        assert fn["description"]


@pytest.mark.parametrize("env_id", ALL_ENVS)
def test_oracle_through_the_bridge_scores_one_and_junk_zero(env_id: str) -> None:
    conv = oracle_conversation(env_id, 7)
    assert conv["reward"] == 1.0
    assert conv["messages"][-1] == {"role": "assistant", "content": "Done."}
    inst = bridge_class(env_id)()
    assert inst.reset(seed=7) is None  # the prompt is already in the dataset row
    assert inst.get_reward() == 0.0
    assert reward_from_env(environments=[inst]) == [0.0]


def test_reset_seeds_the_same_start_state_for_a_group() -> None:
    cls = bridge_class(TOY_ENV_ID)
    row = build_dataset(TOY_ENV_ID, [11])[0]
    a, b = cls(), cls()
    a.reset(**row)
    b.reset(**row)
    assert a.base.opening == b.base.opening == row["prompt"][1]["content"]
    oid = a.base.scenario.bindings["order_id"]
    assert a.get_order_details(order_id=oid) == b.get_order_details(order_id=oid)
    c = cls()
    c.reset(seed=12)
    assert c.base.opening != a.base.opening


def test_dataset_rows_carry_prompt_seed_and_the_bridge_protocol() -> None:
    ds = build_dataset(TOY_ENV_ID, range(3))
    assert ds.column_names == ["prompt", "seed", "hint", "env_id"]
    row = ds[2]
    assert row["seed"] == 2
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    system = row["prompt"][0]["content"]
    assert BRIDGE_NOTE in system and "Any other reply is a message to the user" not in system


def test_user_channel_and_tool_errors() -> None:
    inst = bridge_class(TOY_ENV_ID)()
    inst.reset(seed=3)
    oid = inst.base.scenario.bindings["order_id"]
    err = json.loads(inst.get_order_details(order_id="#nope"))
    assert "error" in err
    inst.get_order_details(order_id=oid)
    # the reason the user gave is the one to pass and to state in the question (every write argument is bound)
    reason = next(json.loads(a)["arguments"]["reason"] for a in inst.base.oracle_actions() if "refund_order" in a)
    reply = inst.send_message_to_user(message=f"Shall I proceed with the refund of order {oid} ({reason})? "
                                              "Please confirm.")
    assert "yes" in reply.lower()
    inst.refund_order(order_id=oid, reason=reason)
    assert inst.get_reward() == 1.0 and inst.last_result.passed
    ended = inst.send_message_to_user(message="Your refund is done, have a nice day.")
    assert "ended the conversation" in ended
    assert "left the conversation" in inst.send_message_to_user(message="hello?")


def test_schema_annotations() -> None:
    assert schema_annotation({"type": "string"}) is str
    assert schema_annotation({"type": "integer"}) is int
    assert schema_annotation({"type": "number"}) is float
    assert schema_annotation({"type": "boolean"}) is bool
    assert schema_annotation({"type": "array", "items": {"type": "string"}}) == list[str]
    assert schema_annotation({"type": "string", "enum": ["a", "b"]}) == Literal["a", "b"]
    assert schema_annotation({"type": ["string", "null"]}) == Optional[str]


def test_keyword_argument_names_and_reserved_tool_names() -> None:
    from transformers.utils import get_json_schema

    from trace_envs.integrations.trl import _make_tool_method
    from trace_envs.spec.model import ToolSpec

    tool = ToolSpec(name="search_flights", description="Search. Args: none here.",
                    parameters={"type": "object", "properties": {"from": {"type": "string"}, "date": {"type": "string"}},
                                "required": ["from"]})
    fn = _make_tool_method(tool)
    schema = get_json_schema(fn)["function"]
    assert set(schema["parameters"]["properties"]) == {"from_", "date"}
    assert "Args" in schema["description"]

    class Fake:
        def _call(self, name: str, args: dict) -> str:
            return json.dumps([name, args])

    assert json.loads(fn(Fake(), from_="JFK")) == ["search_flights", {"from": "JFK"}]


def test_multi_env_factories_and_dataset() -> None:
    envs = [TOY_ENV_ID, *GENERATED[:1]]
    factories = make_env_factories(envs)
    assert set(factories) == set(envs)
    assert len({c.__name__ for c in factories.values()}) == len(envs)
    ds = build_multi_dataset({e: range(2) for e in envs})
    assert sorted(set(ds["environment"])) == sorted(envs)
    assert all(issubclass(c, TraceBridge) for c in factories.values())
    assert all(bridge_tools(c()) for c in factories.values())
