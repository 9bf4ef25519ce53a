"""Validation a generated env must pass before it is published (and what `trace-envs check` reports).

The module compiles and imports; Gymnasium's env checker passes; the oracle scores 1.0 on every validation seed, and so
does a chatty oracle that announces every step before taking it; the oracle without its confirmation questions scores
below 1.0 on every seed where it asked one and wrote, when the policy or the check wants a yes; each mutated oracle
scores below 1.0 on every seed, and so does every wrong-argument mutant (the oracle with one non-key argument of its writes wrong: a well-typed other
value, an invented id, -1, 0, a NaN-like string; `TraceEnv.argument_mutants`);
random and passive policies average below 0.2; every content-free exploit probe averages below 0.1; no constant
decision succeeds on more seeds than the share of the largest scenario class, which must be at most 0.6 (see
`trace_envs.generate.probes`). Agents written from a domain's policy (`extra_agents`) must score 1.0 on every seed.
"""

from __future__ import annotations

import warnings
from typing import Any

from pydantic import BaseModel, Field

from trace_envs.checks.clauses import Asked, Confirmation
from trace_envs.checks.refs import succeeded
from trace_envs.generate.policies import (Policy, chatty, passive_action, random_action, run_actions, run_policy,
                                         run_scripted, unconfirmed)
from trace_envs.generate.probes import PROBES, probe_policy
from trace_envs.runtime.base import TraceEnv

ORACLE_SEEDS = 20
BASELINE_SEEDS = 50
PROBE_SEEDS = 20  # fifteen probes: a class-balanced run of 20 seeds tells a paying probe from one that pays nothing
BASELINE_CEILING = 0.2
PROBE_CEILING = 0.1
CLASS_CEILING = 0.6
REQUIRED_MUTANTS = ("drop_required_call", "swap_calls", "wrong_argument", "forbidden_extra_call", "text_only")


class ProbeReport(BaseModel):
    """One exploit probe over the probe seeds: mean reward, share of seeds it fully succeeded on, and the mean score
    of every clause that paid it anything (the clause to fix when a probe earns too much)."""

    kind: str
    mean: float
    success: float
    bound: str
    paid: dict[str, float] = Field(default_factory=dict)
    rewards: list[float] = Field(default_factory=list, exclude=True, description="The reward on each probe seed.")


class CheckReport(BaseModel):
    """What validation found. `mutants` maps each mutant to its highest score over the seeds."""

    env: str
    oracle: float = Field(description="Lowest oracle score over the seeds (1.0 when all pass).")
    chatty_oracle: float = Field(default=0.0, description="Lowest score of the oracle announcing every step first.")
    unconfirmed_oracle: float | None = Field(
        default=None, description="Highest score of the oracle without its confirmation questions, over the seeds "
                                  "where it asks one and the check pays confirmation (None: no such seed).")
    mutants: dict[str, float] = Field(default_factory=dict)
    argument_mutants: dict[str, float] = Field(
        default_factory=dict, description="Each wrong-argument mutant's highest score over the seeds that have it.")
    random: float = 0.0
    passive: float = 0.0
    probes: dict[str, ProbeReport] = Field(default_factory=dict)
    classes: dict[str, float] = Field(default_factory=dict, description="Share of probe seeds in each scenario class.")
    agents: dict[str, float] = Field(default_factory=dict, description="Lowest score of each policy-written agent.")
    env_checker: str = Field(description="'passed' or the checker's error message.")
    problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_env(
    cls: type[TraceEnv],
    oracle_seeds: int = ORACLE_SEEDS,
    baseline_seeds: int = BASELINE_SEEDS,
    probe_seeds: int = PROBE_SEEDS,
    extra_agents: dict[str, Policy] | None = None,
) -> CheckReport:
    """Everything `generate` checks before it publishes an env, as a report (`ok` when no problem was found).

    `oracle_seeds` seeds for the oracle, its chatty twin, the mutants and `extra_agents` (policies written from the
    domain's policy text, which must score 1.0); `baseline_seeds` for random and passive; `probe_seeds` for every
    exploit probe and the scenario classes."""
    name = f"trace/{cls.SPEC.name}"
    problems: list[str] = []
    checker = _run_env_checker(cls)
    if checker != "passed":
        problems.append(f"env checker: {checker}")
    env = cls()
    oracle_scores, wrote = [], set()  # seeds where a write of the oracle succeeded: there is a write to confirm
    for seed in range(oracle_seeds):
        oracle_scores.append(run_scripted(env, "oracle", seed)[0])
        trace = env.trace()
        if any(succeeded(s) and trace.kind_of(s.name) == "write" for s in trace.steps):
            wrote.add(seed)
    worst = min(oracle_scores)
    if worst < 1.0:
        bad = [s for s, v in enumerate(oracle_scores) if v < 1.0]
        problems.append(f"oracle scored {worst:.3f} < 1.0 on seeds {bad[:5]}")
    chatty_scores = []
    for seed in range(oracle_seeds):
        env.reset(seed=seed)
        chatty_scores.append(run_actions(env, chatty(env.oracle_actions(), offset=3 * seed), seed)[0])
    if min(chatty_scores) < 1.0:
        bad = [s for s, v in enumerate(chatty_scores) if v < 1.0]
        problems.append(f"the oracle announcing each step first scored {min(chatty_scores):.3f} < 1.0 on seeds {bad[:5]}")
    unconfirmed_scores = _unconfirmed_scores(env, wrote)
    if unconfirmed_scores and max(unconfirmed_scores.values()) >= 1.0:
        bad = [s for s, v in unconfirmed_scores.items() if v >= 1.0]
        problems.append(f"the oracle without its confirmation questions scored 1.0 on seeds {bad[:5]}: the check does "
                        "not notice an agent that never asks")
    env.reset(seed=0)
    names = list(env.mutant_actions())
    missing = [m for m in REQUIRED_MUTANTS if m not in names]
    if missing:
        problems.append(f"template defines no mutant(s) {missing}")
    mutants: dict[str, float] = {}
    for mutant in names:
        best = max(run_scripted(env, "mutant", seed, mutant=mutant)[0] for seed in range(oracle_seeds))
        mutants[mutant] = best
        if best >= 1.0:
            problems.append(f"mutant {mutant} scored 1.0: the check does not notice it")
    argument_mutants: dict[str, float] = {}
    for seed in range(oracle_seeds):
        env.reset(seed=seed)
        for mutant, actions in env.argument_mutants().items():
            score = run_actions(env, actions, seed)[0]
            if score >= 1.0 and argument_mutants.get(mutant, 0.0) < 1.0:
                problems.append(f"wrong-argument mutant {mutant} scored 1.0 on seed {seed}: the check does not bind it")
            argument_mutants[mutant] = max(score, argument_mutants.get(mutant, 0.0))
    random_mean = _mean(run_policy(env, random_action, seed)[0] for seed in range(baseline_seeds))
    passive_mean = _mean(run_policy(env, passive_action, seed)[0] for seed in range(baseline_seeds))
    if random_mean >= BASELINE_CEILING:
        problems.append(f"random policy averages {random_mean:.3f} >= {BASELINE_CEILING}")
    if passive_mean >= BASELINE_CEILING:
        problems.append(f"passive policy averages {passive_mean:.3f} >= {BASELINE_CEILING}")
    classes = _class_shares(env, probe_seeds)
    largest = max(classes.values())
    if len(classes) > 1 and largest > CLASS_CEILING:
        problems.append(f"scenario classes are unbalanced: {_fmt_shares(classes)} (the largest must be <= {CLASS_CEILING})")
    probes = {}
    # the clauses that pay: a policy's confirmation penalty pays nothing, it only zeroes an unconfirmed write
    clause_types = {c.type for c in env.check.clauses if not getattr(c, "penalty", False)}
    for probe_name, spec in PROBES.items():
        report = _run_probe(env, probe_name, probe_seeds)
        report.kind = spec.kind_for(clause_types)
        if report.kind == "content_free":
            report.bound = f"mean < {PROBE_CEILING}"
            if report.mean >= PROBE_CEILING:
                problems.append(f"probe {probe_name} ({spec.description}) averages {report.mean:.3f} >= "
                                f"{PROBE_CEILING}; paid by {_fmt_shares(report.paid)}")
        else:
            ceiling = min(largest, CLASS_CEILING)
            report.bound = f"success <= {ceiling:.2f}"
            if report.success > ceiling + 1e-9:
                problems.append(f"probe {probe_name} ({spec.description}) succeeds on {report.success:.2f} of seeds > "
                                f"{ceiling:.2f}: a constant decision should not pay")
        probes[probe_name] = report
    _as_constant_decisions(probes, problems, min(largest, CLASS_CEILING))
    agents = {}
    for agent_name, policy in (extra_agents or {}).items():
        scores = [run_policy(env, policy, seed)[0] for seed in range(oracle_seeds)]
        agents[agent_name] = min(scores)
        if min(scores) < 1.0:
            bad = [s for s, v in enumerate(scores) if v < 1.0]
            problems.append(f"agent {agent_name} (written from the policy) scored {min(scores):.3f} < 1.0 on seeds {bad[:5]}")
    return CheckReport(
        env=name,
        oracle=worst,
        chatty_oracle=min(chatty_scores),
        unconfirmed_oracle=max(unconfirmed_scores.values()) if unconfirmed_scores else None,
        mutants=mutants,
        argument_mutants=argument_mutants,
        random=random_mean,
        passive=passive_mean,
        probes=probes,
        classes=classes,
        agents=agents,
        env_checker=checker,
        problems=problems,
    )


def _unconfirmed_scores(env: TraceEnv, wrote: set[int]) -> dict[int, float]:
    """Seed -> score of the oracle without its confirmation questions, over the seeds where it asks one and a write
    of it succeeds (`wrote`), when the policy requires a yes before writes or the check pays confirmation: where
    every write fails or none is made, there is nothing to confirm."""
    if not (env.SPEC.rules.confirm_writes or any(isinstance(c, (Confirmation, Asked)) for c in env.check.clauses)):
        return {}
    out = {}
    for seed in sorted(wrote):
        env.reset(seed=seed)
        actions = env.oracle_actions()
        plain = unconfirmed(actions)
        if len(plain) < len(actions):
            out[seed] = run_actions(env, plain, seed)[0]
    return out


def _class_shares(env: TraceEnv, seeds: int) -> dict[str, float]:
    counts: dict[str, int] = {}
    for seed in range(seeds):
        env.reset(seed=seed)
        klass = env.scenario.klass if env.scenario is not None else "default"
        counts[klass] = counts.get(klass, 0) + 1
    return {k: v / seeds for k, v in sorted(counts.items())}


def _run_probe(env: TraceEnv, name: str, seeds: int) -> ProbeReport:
    policy = probe_policy(name)
    rewards, successes = [], []
    paid: dict[str, float] = {}
    for seed in range(seeds):
        reward, info = run_policy(env, policy, seed)
        rewards.append(reward)
        successes.append(bool(info.get("success")))
        for clause, value in (info.get("reward_breakdown") or {}).items():
            paid[clause] = paid.get(clause, 0.0) + float(value) / seeds
    penalties = {c.id for c in env.check.clauses if getattr(c, "penalty", False)}
    paid = {k: round(v, 3) for k, v in paid.items() if v > 0 and k not in penalties}
    return ProbeReport(kind=PROBES[name].kind, mean=_mean(rewards), success=_mean(successes), bound="", paid=paid,
                       rewards=rewards)


def _as_constant_decisions(probes: dict[str, ProbeReport], problems: list[str], ceiling: float) -> None:
    """A content-free probe over its ceiling that earned, on every seed, no more than always making the requested
    write did is that constant decision (spraying every tool on the one id the user named, in an env with one read and
    one write, is reading and then writing): it is held to the decision bound instead, as `always_write` is."""
    always = probes.get("always_write")
    if always is None:
        return
    for name, report in probes.items():
        if report.kind != "content_free" or report.mean < PROBE_CEILING or len(report.rewards) != len(always.rewards):
            continue
        if any(got > constant + 1e-9 for got, constant in zip(report.rewards, always.rewards)):
            continue
        problem = next((p for p in problems if p.startswith(f"probe {name} ")), None)
        if problem is None:
            continue
        problems.remove(problem)
        report.kind = "decision"
        report.bound = f"success <= {ceiling:.2f} (no seed above always_write: the same constant decision)"
        if report.success > ceiling + 1e-9:
            problems.append(f"probe {name} ({PROBES[name].description}) succeeds on {report.success:.2f} of seeds > "
                            f"{ceiling:.2f}: a constant decision should not pay")


def _fmt_shares(shares: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in shares.items()) or "nothing"


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _run_env_checker(cls: type[TraceEnv]) -> str:
    from gymnasium.utils.env_checker import check_env

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(cls(), skip_render_check=True)
    except Exception as exc:  # the checker raises assorted errors; report whichever it was
        return f"{type(exc).__name__}: {exc}"
    return "passed"


def report_dict(report: CheckReport) -> dict[str, Any]:
    data = report.model_dump()
    data["ok"] = report.ok
    return data
