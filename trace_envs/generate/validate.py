"""Validation a generated env must pass before it is published (and what `trace-envs check` reports).

The module compiles and imports; Gymnasium's env checker passes; the oracle scores 1.0 on every validation seed; each
mutated oracle scores below 1.0 on every seed; random and passive policies average below 0.2.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, Field

from trace_envs.generate.policies import passive_action, random_action, run_policy, run_scripted
from trace_envs.runtime.base import TraceEnv

ORACLE_SEEDS = 20
BASELINE_SEEDS = 50
BASELINE_CEILING = 0.2
REQUIRED_MUTANTS = ("drop_required_call", "swap_calls", "wrong_argument", "forbidden_extra_call", "text_only")


class CheckReport(BaseModel):
    """What validation found. `mutants` maps each mutant to its highest score over the seeds."""

    env: str
    oracle: float = Field(description="Lowest oracle score over the seeds (1.0 when all pass).")
    mutants: dict[str, float] = Field(default_factory=dict)
    random: float = 0.0
    passive: float = 0.0
    env_checker: str = Field(description="'passed' or the checker's error message.")
    problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def import_module_from(path: Path, name: str | None = None) -> ModuleType:
    """Import an env module from a file, under a unique module name so versions never collide."""
    module_name = name or f"trace_envs_generated_{path.parent.name}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def env_class(module: ModuleType) -> type[TraceEnv]:
    cls = getattr(module, "Env", None)
    if not (isinstance(cls, type) and issubclass(cls, TraceEnv)):
        raise TypeError(f"{module.__name__} does not define Env, a TraceEnv subclass")
    return cls


def validate_env(cls: type[TraceEnv], oracle_seeds: int = ORACLE_SEEDS, baseline_seeds: int = BASELINE_SEEDS) -> CheckReport:
    name = f"trace/{cls.SPEC.name}"
    problems: list[str] = []
    checker = _run_env_checker(cls)
    if checker != "passed":
        problems.append(f"env checker: {checker}")
    env = cls()
    oracle_scores = [run_scripted(env, "oracle", seed)[0] for seed in range(oracle_seeds)]
    worst = min(oracle_scores)
    if worst < 1.0:
        bad = [s for s, v in enumerate(oracle_scores) if v < 1.0]
        problems.append(f"oracle scored {worst:.3f} < 1.0 on seeds {bad[:5]}")
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
    random_mean = _mean(run_policy(env, random_action, seed)[0] for seed in range(baseline_seeds))
    passive_mean = _mean(run_policy(env, passive_action, seed)[0] for seed in range(baseline_seeds))
    if random_mean >= BASELINE_CEILING:
        problems.append(f"random policy averages {random_mean:.3f} >= {BASELINE_CEILING}")
    if passive_mean >= BASELINE_CEILING:
        problems.append(f"passive policy averages {passive_mean:.3f} >= {BASELINE_CEILING}")
    return CheckReport(
        env=name,
        oracle=worst,
        mutants=mutants,
        random=random_mean,
        passive=passive_mean,
        env_checker=checker,
        problems=problems,
    )


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
