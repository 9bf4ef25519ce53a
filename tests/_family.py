"""Shared by the per-family tests: the committed example specs and envs, a policy agent, seeds and oracle calls."""

from __future__ import annotations

import functools
from pathlib import Path

from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.publish import MODULE_FILE
from trace_envs.runtime import TraceEnv
from trace_envs.spec.io import load_specs
from trace_envs.spec.model import CapabilitySpec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "specs"
GENERATED = ROOT / "generated"


def example_spec(name: str) -> CapabilitySpec:
    """The committed example spec `examples/specs/<name>.json`."""
    return load_specs(EXAMPLES / f"{name}.json")[0]


@functools.cache
def committed_env(name: str) -> type[TraceEnv]:
    """The env class of the committed `generated/<name>`, imported once per process. test_registry_and_sync keeps it
    byte-identical to what its example spec renders, and the `validated_example` fixture validates that render."""
    return env_class(import_module_from(GENERATED / name / MODULE_FILE))


def committed_example(name: str) -> tuple[CapabilitySpec, type[TraceEnv]]:
    """(the example spec, the committed env class) of `name`; the `validated_example` fixture adds the validation."""
    return example_spec(name), committed_env(name)


def airline_policy(agent: str = "airline.py"):
    """A fresh policy from `examples/policy_agents/<agent>`: `airline.py` (the family authors' agent following the
    airline policy to the letter) or `airline_literal.py` (written from the policy text and tool schemas alone)."""
    import importlib.util
    import sys

    name = "trace_envs_example_" + agent.removesuffix(".py")
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "policy_agents" / agent)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module.make_policy()


def seed_where(env, predicate, seeds=range(200)) -> int:
    """The first seed whose scenario satisfies `predicate(scenario)` (the env is left reset to it)."""
    for seed in seeds:
        env.reset(seed=seed)
        if predicate(env.scenario):
            return seed
    raise AssertionError("no seed satisfies the predicate")


def write_args(env, tool: str) -> dict:
    """The arguments of the oracle's first call of `tool` in the current scenario."""
    import json

    for action in env.oracle_actions():
        if action.startswith("{") and json.loads(action)["name"] == tool:
            return json.loads(action)["arguments"]
    raise AssertionError(f"the oracle makes no {tool} call")


def mine_random(seed: int, folder: Path):
    """A randomized domain's runs written into `folder` and mined offline there (`folder/mined`): (domain, the kept
    capabilities as `capabilities.json` holds them)."""
    import json

    from trace_envs.cli.mine_cmd import mine as mine_command
    from trace_envs.datasets.randomized import random_domain

    dom = random_domain(seed)
    path = dom.write_runs(dom.runs(), folder)
    mine_command([str(path)], out=folder / "mined", offline=True, quiet=True)
    caps = json.loads((folder / "mined" / "capabilities.json").read_text())
    return dom, caps if isinstance(caps, list) else caps.get("capabilities", [])
