"""Scripted policies that drive any `TraceEnv`: the oracle, its mutants, a random policy and a passive one.

They validate generated envs (`trace-envs check`) and serve as `scripted:*` policies in evaluation.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trace_envs.generate.progress_phrases import PROGRESS_PHRASES
from trace_envs.language.turns import read_message
from trace_envs.runtime.base import TraceEnv
from trace_envs.runtime.parse import parse_action

Policy = Callable[[TraceEnv, np.random.Generator, int], str]

PASSIVE_TEXT = "I understand. Thank you for reaching out; I have noted your request."


def random_value(schema: Any, rng: np.random.Generator, depth: int = 0) -> Any:
    """A random value of the JSON type `schema` asks for (an enum's members when it lists them)."""
    if not isinstance(schema, dict):
        return str(rng.choice(_WORDS))
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[int(rng.integers(len(enum)))]
    kind = schema.get("type")
    kind = kind[int(rng.integers(len(kind)))] if isinstance(kind, list) and kind else kind
    if kind == "integer":
        return int(rng.integers(0, 1000))
    if kind == "number":
        return round(float(rng.uniform(0, 1000)), 2)
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind == "array":
        return [] if depth > 2 else [random_value(schema.get("items", {}), rng, depth + 1)]
    if kind == "object":
        props = schema.get("properties", {}) if depth <= 2 else {}
        return {k: random_value(v, rng, depth + 1) for k, v in props.items()}
    return "".join(rng.choice(list(string.ascii_letters + string.digits), size=int(rng.integers(4, 10))))


_WORDS = ["please", "your", "request", "order", "thanks", "check", "account", "sure", "?", "ok"]


def random_action(env: TraceEnv, rng: np.random.Generator, turn: int) -> str:
    """A random tool call with type-correct random arguments (70%) or random text (30%)."""
    if rng.random() < 0.7 and env.tool_specs:
        tool = env.tool_specs[int(rng.integers(len(env.tool_specs)))]
        args = {name: random_value(schema, rng) for name, schema in tool.properties.items()}
        return json.dumps({"name": tool.name, "arguments": args})
    return " ".join(rng.choice(_WORDS, size=int(rng.integers(3, 12))))


def passive_action(env: TraceEnv, rng: np.random.Generator, turn: int) -> str:
    return PASSIVE_TEXT


def chatty(actions: list[str], offset: int = 0) -> list[str]:
    """The same actions with a progress message before every tool call, one of the real agents' `PROGRESS_PHRASES`
    in turn from `offset` (validation passes the seed, so that the seeds between them use every phrase): an agent
    that announces each step must score what the silent one does."""
    out = []
    for action in actions:
        if parse_action(action).calls:
            out.append(PROGRESS_PHRASES[offset % len(PROGRESS_PHRASES)])
            offset += 1
        out.append(action)
    return out


def unconfirmed(actions: list[str]) -> list[str]:
    """The same actions without the messages that ask the user for a yes: an agent that never asks before acting must
    score below one that does wherever a confirmation is paid (by its family, or by a policy that requires one)."""
    return [a for a in actions if parse_action(a).calls or not read_message(a).confirms]


def run_actions(env: TraceEnv, actions: list[str], seed: int) -> tuple[float, dict[str, Any]]:
    """Reset with `seed`, play `actions` in order and score the episode."""
    env.reset(seed=seed)
    return _play(env, iter(actions))


def run_scripted(env: TraceEnv, which: str, seed: int, mutant: str | None = None) -> tuple[float, dict[str, Any]]:
    """Play the env's oracle (or one of its named mutants) for `seed`."""
    env.reset(seed=seed)
    actions = env.oracle_actions() if mutant is None else env.mutant_actions()[mutant]
    return _play(env, iter(actions))


def run_policy(env: TraceEnv, policy: Policy, seed: int, sample: int = 0) -> tuple[float, dict[str, Any]]:
    """Play `policy` on the scenario of `seed`; `sample` varies the policy's own randomness (for pass@k)."""
    env.reset(seed=seed)
    rng = np.random.default_rng([seed, sample, 1_000_003])
    turn = 0

    def actions():
        nonlocal turn
        while True:
            turn += 1
            yield policy(env, rng, turn)

    return _play(env, actions())


def _play(env: TraceEnv, actions) -> tuple[float, dict[str, Any]]:
    # The episode's return: the last step's reward in terminal mode, the sum of every step's in per_turn mode.
    info: dict[str, Any] = {}
    total = 0.0
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            return float(total), info
    # The script ran out before the user ended the conversation: score what was done.
    result = env.score()
    return result.score, {**info, "reward_breakdown": result.breakdown, "success": result.passed}


def unwrap(env: gym.Env) -> TraceEnv:
    base = env.unwrapped
    if not isinstance(base, TraceEnv):
        raise TypeError(f"{type(base).__name__} is not a trace-envs env")
    return base
