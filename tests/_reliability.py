"""Shared helpers of the reliability tests (property, determinism, crash safety, load).

Hypothesis settings come from one profile per mode: `max_examples` scales with `TRACE_ENVS_FUZZ` (set by `make fuzz`).
The profiles are registered here but never loaded globally: each property test is decorated with `examples(n)`, so no
other test module's hypothesis settings change.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU_BENCH_FILE = DATA / "tau-bench" / "gpt-4o-airline.json"
TAU2_FILE = DATA / "tau2-bench" / "results" / "gpt-4.1_airline.json"

FUZZ = os.environ.get("TRACE_ENVS_FUZZ", "").strip() not in ("", "0", "false", "no")

settings.register_profile(
    "trace-envs-reliability",
    max_examples=50,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.register_profile(
    "trace-envs-reliability-fuzz",
    parent=settings.get_profile("trace-envs-reliability"),
    max_examples=2000,
)
PROFILE = settings.get_profile("trace-envs-reliability-fuzz" if FUZZ else "trace-envs-reliability")


def examples(default: int, fuzz: int | None = None) -> settings:
    """Settings for one property test: `default` examples normally, `fuzz` (2000 unless given) under TRACE_ENVS_FUZZ."""
    n = (fuzz if fuzz is not None else PROFILE.max_examples) if FUZZ else default
    return settings(PROFILE, max_examples=n)


@contextlib.contextmanager
def user_stack(frames_above: int = 50):
    """Run the body with the recursion headroom a user's code has under Python's default limit (1000 frames).

    Hypothesis raises the recursion limit while it runs a test, which hides stack-depth crashes (a deeply nested tool
    argument that the parser accepts but a deep copy or a check then recurses through). Inside this block the limit
    is the current depth plus what a caller `frames_above` deep would have left.
    """
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + max(100, 1000 - frames_above))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def committed_envs() -> list[str]:
    """Names of the committed envs, as found now (other engineers keep adding them)."""
    return sorted(p.parent.name for p in GENERATED.glob("*/env.py") if not p.parent.name.startswith("."))


@lru_cache(maxsize=None)
def env_class(name: str):
    """The `Env` class of a committed env, imported once per process."""
    from trace_envs.registry import load_env_class

    return load_env_class(str(GENERATED / name / "env.py"))


def spec_hash_of(folder: Path) -> str:
    return json.loads((folder / "spec.json").read_text())["spec_hash"]


def probe_env_class():
    """A small hand-built `TraceEnv` whose check uses every clause type and whose write tool takes array, object and
    number arguments: it reaches runtime paths (grounding, deep copies of arguments, confirmation) that the committed
    envs may not."""
    from trace_envs.checks import Check
    from trace_envs.runtime import Scenario, ToolError, TraceEnv
    from trace_envs.runtime.world import call, new_state, read_record, write_record
    from trace_envs.spec.model import CapabilitySpec, Evidence, ScenarioKnobs, ToolSpec

    key = {"type": "string"}
    # Built with model_construct: the family rules (roles, params, bindings per family) are not what this probe is
    # about, and they change as the templates grow. Every part is still a validated model.
    spec = CapabilitySpec.model_construct(
        name="reliability_probe",
        description="probe",
        family="argument_grounding",
        domain="custom",
        roles={},
        params={},
        policy="",
        hint="",
        knobs=ScenarioKnobs(),
        label_check=None,
        evidence=Evidence(),
        spec_hash=None,
        tools=[ToolSpec.model_validate(t) for t in [
            {"name": "get_order", "kind": "read", "parameters": {"type": "object", "properties": {"order_id": key},
                                                                 "required": ["order_id"]}},
            {"name": "update_order", "kind": "write", "parameters": {"type": "object", "properties": {
                "order_id": key, "items": {"type": "array"}, "meta": {"type": "object"}, "amount": {"type": "number"},
            }, "required": ["order_id", "items"]}},
        ]],
        check=Check.model_validate({"clauses": [
            {"id": "read", "type": "call_made", "call": {"tool": "get_order", "args": {"order_id": {"$var": "target"}}}},
            {"id": "order", "type": "order", "first": {"tool": "get_order"}, "then": {"kind": "write"},
             "join": ["order_id"]},
            {"id": "confirmed", "type": "confirmation", "call": {"kind": "write"}},
            {"id": "grounded", "type": "grounded", "call": {"tool": "update_order"}, "args": ["order_id", "items"]},
            {"id": "all", "type": "all_completed", "calls": [{"tool": "get_order"}, {"tool": "update_order"}]},
            {"id": "told", "type": "communicated", "values": [{"$var": "total"}], "after": {"tool": "get_order"}},
            {"id": "no_other", "type": "no_call", "call": {"kind": "write", "args": {"order_id": {"$not": {"$var": "target"}}}}},
            {"id": "state", "type": "final_state", "path": "records.$target.order_id", "op": "exists"},
        ]}),
    ).with_hash()

    class ProbeEnv(TraceEnv):
        SPEC = spec

        def build_scenario(self, rng):
            ids = [f"#W{int(rng.integers(1000, 9999))}{i}" for i in range(3)]
            total = round(float(rng.uniform(10, 500)), 2)
            records = {rid: {"order_id": rid, "items": ["i1", "i2"], "total": total} for rid in ids}
            target = ids[0]
            oracle = [call("get_order", order_id=target), f"The total is {total}. Shall I proceed with the update?",
                      call("update_order", order_id=target, items=["i1", "i2"]), "Done, anything else?"]
            return Scenario(state=new_state(records), bindings={"target": target, "total": total},
                            opening=f"Please update order {target}.", oracle=oracle)

        def run_tool(self, name, args, state):
            if name == "get_order":
                return read_record(state, "order_id", args)
            if name == "update_order":
                return write_record(state, name, "order_id", args)
            raise ToolError(name)

    return ProbeEnv
