"""A policy that requires a yes before every write (`rules.confirm_writes`) is enforced in every env, not only in the
confirmation family's: an agent that never asks scored 1.0 on 7 of the 16 committed envs before. The check gains a
confirmation penalty (`runtime.backend.policy_confirmation`); validation plays the oracle without its questions
(`CheckReport.unconfirmed_oracle`) and refuses an env that pays it 1.0 where the oracle writes."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import trace_envs  # noqa: F401  (registers the committed envs)
from trace_envs.checks.clauses import CallRef, Confirmation
from trace_envs.checks.refs import succeeded
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.generate.policies import run_actions, unconfirmed
from trace_envs.generate.validate import validate_env

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(p.parent.name for p in (ROOT / "generated").glob("*/env.py"))
SEEDS = range(10)
PENALTY = Confirmation(id="confirmed_writes", penalty=True, call=CallRef(kind="write"))
KINDS = {"cancel": "write", "get": "read"}


def _trace(*steps: tuple) -> ActionTrace:
    out = []
    for step in steps:
        if step[0] == "call":
            out.append(TraceStep(kind="call", name=step[1], arguments=step[2], error=len(step) > 3 and step[3]))
        else:
            out.append(TraceStep(kind=step[0], text=step[1]))
    return ActionTrace(steps=out, tool_kinds=KINDS)


def _score(*steps: tuple) -> float:
    return PENALTY.assess(_trace(*steps), {})[0]


def test_the_penalty_zeroes_an_unasked_write_and_asks_nothing_of_an_episode_without_one():
    ask = ("say", "I'm about to cancel reservation A and reservation B. Do you confirm (yes/no)?")
    yes, no = ("user", "Yes, please go ahead."), ("user", "No, keep them.")
    cancel_a, cancel_b = ("call", "cancel", {"id": "A"}), ("call", "cancel", {"id": "B"})
    assert _score(("call", "get", {"id": "A"}), ("say", "Your reservation is in basic economy.")) == 1.0
    assert _score(cancel_a) == 0.0
    assert _score(ask, yes, cancel_a) == 1.0
    assert _score(ask, yes, cancel_a, cancel_b) == 1.0  # one question naming both writes covers both
    assert _score(ask, no, cancel_a) == 0.0
    assert _score(("say", "Shall I look it up (yes/no)?"), yes, cancel_a) == 0.0  # names no cancellation
    assert _score(("call", "cancel", {"id": "A"}, True)) == 1.0  # a refused write did nothing to confirm


def _writes(env) -> bool:
    trace = env.trace()
    return any(succeeded(s) and trace.kind_of(s.name) == "write" for s in trace.steps)


@pytest.mark.parametrize("name", COMMITTED)
def test_an_agent_that_never_asks_earns_less_wherever_the_policy_wants_a_yes(name):
    env = gym.make(f"trace/{name}").unwrapped
    for seed in SEEDS:
        env.reset(seed=seed)
        oracle = env.oracle_actions()
        assert run_actions(env, oracle, seed)[0] == 1.0
        if not (env.SPEC.rules.confirm_writes and _writes(env)):
            continue
        plain = unconfirmed(oracle)
        assert len(plain) < len(oracle), f"seed {seed}: the oracle writes without asking where the policy wants a yes"
        assert run_actions(env, plain, seed)[0] < 1.0, seed
    if env.SPEC.rules.confirm_writes and any(t.kind == "write" for t in env.tool_specs):
        assert any(c.id == "confirmed_writes" or c.type == "confirmation" for c in env.check.clauses)


def test_validation_refuses_an_env_that_pays_an_agent_that_never_asks():
    cls = type(gym.make("trace/airline_check_cabin_before_cancel").unwrapped)

    class Unpoliced(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.check = self.check.model_copy(
                update={"clauses": [c for c in self.check.clauses if c.id != "confirmed_writes"]})

    report = validate_env(Unpoliced, oracle_seeds=6, baseline_seeds=6, probe_seeds=6)
    assert report.unconfirmed_oracle == 1.0
    assert any("without its confirmation questions" in p for p in report.problems)
    assert validate_env(cls, oracle_seeds=6, baseline_seeds=6, probe_seeds=6).unconfirmed_oracle == 0.0
