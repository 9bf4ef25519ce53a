"""Every family writes its spec's expert hint from its roles and params, and an env shows it on demand."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import trace_envs  # noqa: F401
from trace_envs.families import all_tasks, get_task, hint_of
from trace_envs.spec.model import CapabilitySpec

SPECS = sorted(Path(__file__).resolve().parents[1].glob("generated/*/spec.json"))


def _spec(path: Path, **changes: object) -> CapabilitySpec:
    return CapabilitySpec.model_validate({**json.loads(path.read_text()), **changes})


@pytest.mark.parametrize("path", SPECS, ids=[p.parent.name for p in SPECS])
def test_the_family_writes_a_hint_naming_the_tools_of_the_capability(path: Path) -> None:
    spec = _spec(path, hint="")
    hint = get_task(spec.family).hint(spec)
    roles = spec.roles
    named = [roles[r] for r in ("read", "write", "handoff", "fix", "search", "alt") if r in roles]
    assert hint and all(tool in hint for tool in named), hint
    for value in [*spec.params.get("blocked", []), *spec.params.get("values", [])]:
        assert str(value).replace("_", " ") in hint  # what the policy forbids, what the condition selects
    assert hint_of(spec) == hint and hint_of(_spec(path)) == (_spec(path).hint or hint)


def test_every_registered_family_has_a_committed_env_whose_hint_it_writes() -> None:
    families = {_spec(p).family for p in SPECS}
    assert set(all_tasks()) - families <= {"custom"}, set(all_tasks()) - families


def test_amounts_and_keys_are_named_in_the_hint() -> None:
    by_family = {_spec(p).family: _spec(p, hint="") for p in SPECS}
    spec = by_family["aggregation_arithmetic"]
    assert "add up" in get_task(spec.family).hint(spec)
    spec = by_family["information_gathering"]
    assert f"Ask the user for the {spec.params['label']}" in get_task(spec.family).hint(spec)


def test_an_env_without_an_authored_hint_shows_the_family_hint_when_asked() -> None:
    path = next(p for p in SPECS if not _spec(p).hint)
    env = gym.make(f"trace/{path.parent.name}").unwrapped
    env.reset(seed=3, options={"hint": True})
    assert env.hint_used and env.system_prompt.endswith(f"# Hint\n{env.hint_text}")
    env.reset(seed=3, options={"hint": False})
    assert not env.hint_used and "# Hint" not in env.system_prompt
