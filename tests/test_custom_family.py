"""A family from user code registers through the same `register_family` path as the built-in ones, shows up in the
spec schema, and generates a validated env (examples/custom_family/refund_destination.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trace_envs.datasets.planted import PLANTED_RULES, generate_planted
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.families import (
    Family,
    FamilyError,
    all_families,
    env_check,
    get_family,
    register_family,
    unregister_family,
)
from trace_envs.generate.policies import run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.spec.from_profile import tool_spec
from trace_envs.spec.io import json_schema, parse_specs
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.profile import build_profile

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_family"


@pytest.fixture(scope="module")
def family():
    sys.path.insert(0, str(EXAMPLE))
    import refund_destination  # noqa: F401  (registers the family)

    yield get_family("refund_destination")
    unregister_family("refund_destination")  # other tests see the built-in families only
    sys.modules.pop("refund_destination", None)
    sys.path.remove(str(EXAMPLE))


def test_it_registers_like_a_built_in_family(family):
    assert "refund_destination" in all_families() and isinstance(family, Family)
    assert "refund_destination" in json_schema()["properties"]["family"]["enum"]
    with pytest.raises(FamilyError, match=r"family 'refund_destination' is already registered \(by refund_destination"):
        register_family(type(family)())


def test_bad_families_are_refused_with_exact_errors(family):
    with pytest.raises(FamilyError, match=r"register_family takes a Family instance: call register_family\(RefundDestination\(\)\)"):
        register_family(type(family))
    bad = type("Bad", (Family,), {"name": "Bad Name", "summary": "x", "roles": ("read",)})
    with pytest.raises(FamilyError, match="name must be a slug"):
        register_family(bad())
    empty = type("Empty", (Family,), {"name": "empty_family", "summary": "", "roles": ("read",)})
    with pytest.raises(FamilyError, match="summary \\(a sentence\\) is missing; .*env_class must be a TraceEnv"):
        register_family(empty())
    with pytest.raises(FamilyError, match="unknown family 'no_such_family'; registered families: "):
        get_family("no_such_family")


def test_a_spec_of_the_family_generates_a_validated_env(family, tmp_path):
    profile = build_profile(generate_planted(400, 0))
    roles = {"read": "get_order_details", "write": "cancel_order", "key": "order_id"}
    params = {"field": "payment_method_id"}
    spec = CapabilitySpec(
        name="tell_refund_destination", description="Say where the refund of a cancellation goes.",
        family="refund_destination", domain="retail", roles=roles, params=params,
        tools=[tool_spec(profile, t) for t in ("get_order_details", "cancel_order")],
        policy="Before any change, list the action details and get an explicit yes. Only pending orders can be "
        "cancelled; the refund goes to the original payment method.",
        rules=PLANTED_RULES.model_copy(update={"writes": [PLANTED_RULES.rule("cancel_order")]}),
        invariants=profile.invariants["get_order_details"],
        check=env_check("refund_destination", roles, params),
    ).with_hash()
    assert parse_specs(spec.model_dump(mode="json"))[0] == spec  # valid against the schema with the family in it
    result = generate_one(spec, tmp_path, seeds=10)
    assert result.published, result.error
    env = env_class(import_module_from(tmp_path / spec.name / MODULE_FILE))()
    assert run_scripted(env, "oracle", 3)[0] == 1.0
    assert run_scripted(env, "mutant", 3, mutant="drop_required_call")[0] < 1.0
