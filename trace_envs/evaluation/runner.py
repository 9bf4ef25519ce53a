"""`evaluate`: any policy, scripted or model-backed, on an env's fixed seeds, summarized in one report shape."""

from __future__ import annotations

from typing import Any

from trace_envs.evaluation.options import EvalOptions
from trace_envs.evaluation.policy import Policy, build_policy
from trace_envs.evaluation.results import EvalReport, summarize


def evaluate(env_id: str, policy: Policy | str, episodes: int | None = None, *, progress: bool = False,
             **options: Any) -> EvalReport:
    """Run `episodes` fixed seeds (`seed_offset`, ...) x `samples` rollouts of `policy` and summarize.

    Args:
        env_id: an env id or bare name (`trace_envs.registry.resolve_env_id`: Gymnasium's NameNotFound if unknown).
        policy: a policy object, or its text (`trace_envs.evaluation.policy`: scripted:, hf:, routed:, openai:).
        episodes: how many consecutive seeds (default: `EvalOptions.episodes`).
        progress: a model policy prints a line to stderr after each batch of episodes.
        options: `EvalOptions` fields: samples, seed_offset, max_turns, and how a model policy samples
            (temperature, max_new_tokens, chat_template, base_url, batch_size); a pydantic ValidationError (a
            ValueError) names any unknown option or value out of range.
    """
    from trace_envs.registry import resolve_env_id

    opts = EvalOptions(**options, **({} if episodes is None else {"episodes": episodes}))
    env_id = resolve_env_id(env_id)
    pol = build_policy(policy, opts) if isinstance(policy, str) else policy
    seeds = list(range(opts.seed_offset, opts.seed_offset + opts.episodes))
    # Only what was asked for reaches `rollouts`: a policy object of the user's may take neither.
    asked = {k: v for k, v in {"max_turns": opts.max_turns, "progress": progress}.items() if v}
    results = pol.rollouts(env_id, seeds, opts.samples, **asked)
    return summarize(env_id, pol.name, results, opts.episodes, opts.samples, opts.seed_offset)
