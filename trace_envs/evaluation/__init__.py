"""Evaluation of a policy on an env: one `evaluate` for every policy kind, one reading of a policy's text.

- `results`: `EpisodeResult`, `EvalReport`, `summarize`, pass@k; the held-out seed range `EVAL_SEED_OFFSET`.
- `options`: `PolicyOptions` (how a model policy samples) and `EvalOptions` (which seeds, how many samples).
- `policy`: `parse_policy` (scripted:, hf:, routed:, openai:) and `build_policy`: scripted policies are built here,
  model-backed ones by the training package through `trace_envs.training`.
- `scripted`: the oracle, random and passive policies (no model).
- `runner`: `evaluate(env_id, policy, episodes, **options)`.
"""

from trace_envs.evaluation.runner import evaluate
from trace_envs.evaluation.options import EvalOptions, PolicyOptions
from trace_envs.evaluation.policy import Policy, PolicySpec, build_policy, parse_policy
from trace_envs.evaluation.results import (
    EVAL_SEED_OFFSET,
    EpisodeResult,
    EvalReport,
    group_by_seed,
    pass_at_k,
    pass_at_ks,
    summarize,
)
from trace_envs.evaluation.scripted import SCRIPTED_KINDS, ScriptedPolicy

__all__ = [
    "EVAL_SEED_OFFSET", "SCRIPTED_KINDS", "EpisodeResult", "EvalOptions", "EvalReport", "Policy", "PolicyOptions",
    "PolicySpec", "ScriptedPolicy", "build_policy", "evaluate", "group_by_seed", "parse_policy", "pass_at_k",
    "pass_at_ks", "summarize",
]
