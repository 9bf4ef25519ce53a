"""A family from user code registers its two halves through the same paths as the built-in ones: its task
(`register_task`: shows up in the spec schema, generates a validated env) and its detector (`register_detector`: the
offline miner proposes and labels it). See examples/custom_family/refund_destination/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trace_envs.datasets.planted import PLANTED_RULES, generate_planted
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.families import FamilyError, Task, all_tasks, env_check, get_task, register_task, unregister_task
from trace_envs.generate.policies import run_scripted
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.mining.detector import Detector, all_detectors, register_detector, unregister_detector
from trace_envs.mining.label import label_run
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.spec.from_profile import tool_spec
from trace_envs.spec.io import json_schema, parse_specs
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.profile import build_profile

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_family"


@pytest.fixture(scope="module")
def family():
    sys.path.insert(0, str(EXAMPLE))
    import refund_destination  # noqa: F401  (registers the task)

    yield get_task("refund_destination")
    unregister_task("refund_destination")  # other tests see the built-in families only
    unregister_detector("refund_destination")
    for name in ("refund_destination", "refund_destination.task", "refund_destination.detector"):
        sys.modules.pop(name, None)
    sys.path.remove(str(EXAMPLE))


@pytest.fixture(scope="module")
def detector(family):
    import refund_destination.detector  # noqa: F401  (registers the detector)

    return all_detectors()["refund_destination"]


def test_it_registers_like_a_built_in_family(family):
    assert "refund_destination" in all_tasks() and isinstance(family, Task)
    assert "refund_destination" in json_schema()["properties"]["family"]["enum"]
    with pytest.raises(FamilyError, match=r"family 'refund_destination' is already registered \(by refund_destination"):
        register_task(type(family)())


def test_importing_the_family_loads_its_task_and_no_mining_code():
    """What a generated env imports (the family's package) registers the task and loads neither its detector nor
    the miner (a fresh interpreter, so this test's own imports do not count)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import refund_destination; "
            "from trace_envs.families import get_task; get_task('refund_destination'); "
            "print(sorted(m for m in sys.modules if m.endswith('.detector') or m.startswith('trace_envs.mining')))")
    out = subprocess.run([sys.executable, "-c", code, str(EXAMPLE)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_bad_tasks_are_refused_with_exact_errors(family):
    with pytest.raises(FamilyError, match=r"register_task takes a Task instance: call register_task\(RefundDestination\(\)\)"):
        register_task(type(family))
    bad = type("Bad", (Task,), {"name": "Bad Name", "summary": "x", "roles": ("read",)})
    with pytest.raises(FamilyError, match="name must be a slug"):
        register_task(bad())
    empty = type("Empty", (Task,), {"name": "empty_family", "summary": "", "roles": ("read",)})
    with pytest.raises(FamilyError, match="summary \\(a sentence\\) is missing; .*env_class must be a TraceEnv"):
        register_task(empty())
    with pytest.raises(FamilyError, match="unknown family 'no_such_family'; registered families: "):
        get_task("no_such_family")


def test_bad_detectors_are_refused_with_exact_errors(detector):
    with pytest.raises(FamilyError, match=r"register_detector takes a Detector instance: call register_detector\("):
        register_detector(type(detector))
    with pytest.raises(FamilyError, match=r"detector 'refund_destination' is already registered"):
        register_detector(type(detector)())
    orphan = type("Orphan", (Detector,), {"task": "no_such_family"})
    with pytest.raises(FamilyError, match="unknown family 'no_such_family'"):
        register_detector(orphan())


def test_the_offline_miner_proposes_and_labels_it(detector):
    """On the planted retail runs (whose agents never say where a refund goes) the detector proposes the family over
    the cancellation with the record's payment field, labels every run that read the order and cancelled LACKING (one
    that never read it knows no method: NA), and PRESENT once an agent message after the cancellation states the
    method the order holds."""
    runs = generate_planted(400, 0)
    profile = build_profile(runs)
    cands = {c.name: c for c in propose_offline(profile, runs) if c.spec.family == "refund_destination"}
    cand = cands["tell_refund_destination_after_cancel_order"]
    assert cand.detector == "refund_destination" and cand.spec.params == {"field": "payment_method_id"}
    cancelled = [r for r in runs if "cancel_order" in {c.name for c in r.agent_calls if not c.error}]
    read = [r for r in cancelled if "get_order_details" in {c.name for c in r.agent_calls if not c.error}]
    assert read and {label_run(cand, r, profile.kinds) for r in read} == {"LACKING"}
    assert {label_run(cand, r, profile.kinds) for r in cancelled if r not in read} == {"NA"}
    run = read[0]
    order = next(json.loads(c.result) for c in run.tool_calls if c.name == "get_order_details" and not c.error)
    told = run.model_copy(update={"messages": [*run.messages, {
        "role": "assistant", "content": f"The refund goes to your payment method {order['payment_method_id']}."}]})
    assert label_run(cand, told, profile.kinds) == "PRESENT"


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
