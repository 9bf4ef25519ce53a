"""Evaluation of a policy on an env without a model: episode results, reports, pass@k, and the scripted policies.

Scripted policies (`scripted:oracle|random|passive`) act on the Gymnasium env itself (`env.step(action)`): the oracle
replays the scenario's oracle actions, random makes type-correct random tool calls and random remarks, passive only
talks. Model-backed policies (`hf:`, `openai:`, `routed:`) live in `adapters_train.evaluate`; they produce the same
`EpisodeResult`s and are summarized by the same `summarize`, so every report has one shape.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Protocol, Sequence

# Held-out evaluation seeds start here; training seeds are drawn below it, so the two never overlap.
EVAL_SEED_OFFSET = 1_000_000
SCRIPTED_KINDS = ("oracle", "random", "passive")


# ---- results -----------------------------------------------------------------------------------------------------------
@dataclass
class EpisodeResult:
    """One (seed, sample) episode: its reward, whether the check passed, each clause's score and why, and the whole
    conversation (OpenAI chat messages, system prompt first) for transcripts."""

    seed: int
    sample: int
    reward: float
    passed: bool
    breakdown: dict[str, float] = field(default_factory=dict)
    turns: int = 0
    adapter: str | None = None  # for a routed policy: the adapter the router chose ("none": the base model)
    reasons: dict[str, str] = field(default_factory=dict)  # clause id -> one line saying why it scored what it did
    messages: list[dict[str, Any]] = field(default_factory=list)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c successes (Chen et al., 2021)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def group_by_seed(results: Iterable[EpisodeResult]) -> dict[int, list[EpisodeResult]]:
    """Results grouped by seed, in first-seen order (a GRPO group or a pass@k sample set each)."""
    groups: dict[int, list[EpisodeResult]] = {}
    for r in results:
        groups.setdefault(r.seed, []).append(r)
    return groups


def pass_at_ks(results: Sequence[EpisodeResult], ks: Iterable[int]) -> dict[str, float]:
    """pass@k averaged over seeds, for each k in `ks` that the smallest group's size allows."""
    groups = group_by_seed(results)
    n = min(len(g) for g in groups.values()) if groups else 0
    out = {}
    for k in ks:
        if 1 <= k <= n:
            vals = [pass_at_k(len(g), sum(r.passed for r in g), k) for g in groups.values()]
            out[f"pass@{k}"] = sum(vals) / len(vals)
    return out


@dataclass
class EvalReport:
    """A policy's results on an env's fixed seeds, with the aggregates `eval` prints."""

    env_id: str
    policy: str
    episodes: int
    samples: int
    seed_offset: int
    success_rate: float
    mean_reward: float
    clauses: dict[str, float]
    pass_at: dict[str, float]
    results: list[EpisodeResult]

    def to_dict(self, with_results: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_results:
            d.pop("results")
        routed = [r for r in self.results if r.adapter is not None]
        if routed:
            d["adapters"] = {str(r.seed): r.adapter for r in routed}
        return d

    def format(self) -> str:
        lines = [
            f"env: {self.env_id}",
            f"policy: {self.policy}",
            f"episodes: {self.episodes} seeds x {self.samples} samples (seeds {self.seed_offset}..{self.seed_offset + self.episodes - 1})",
            f"success_rate: {self.success_rate:.3f}",
            f"mean_reward: {self.mean_reward:.3f}",
        ]
        lines += [f"clause {k}: {v:.3f}" for k, v in self.clauses.items()]
        lines += [f"{k}: {v:.3f}" for k, v in self.pass_at.items()]
        routed = [r for r in self.results if r.adapter is not None]
        if routed:
            lines.append("adapters used: " + ", ".join(f"{a} x{n}" for a, n in Counter(r.adapter for r in routed).items()))
            lines += [f"  seed {r.seed}: {r.adapter} (reward {r.reward:.3f})" for r in routed]
        return "\n".join(lines)


def summarize(env_id: str, policy: str, results: list[EpisodeResult], episodes: int, samples: int, seed_offset: int) -> EvalReport:
    """Aggregate episode results into a report.

    Args:
        env_id: the env evaluated. policy: the policy's name as the user gave it.
        results: every (seed, sample) episode. episodes, samples, seed_offset: the seeds asked for.
    """
    n = max(len(results), 1)
    clause_names: list[str] = []
    for r in results:
        clause_names += [c for c in r.breakdown if c not in clause_names]
    clauses = {c: sum(r.breakdown.get(c, 0.0) for r in results) / n for c in clause_names}
    ks = [k for k in (1, 2, 4, 8, 16) if k <= samples] or [1]
    return EvalReport(
        env_id=env_id,
        policy=policy,
        episodes=episodes,
        samples=samples,
        seed_offset=seed_offset,
        success_rate=sum(r.passed for r in results) / n,
        mean_reward=sum(r.reward for r in results) / n,
        clauses=clauses,
        pass_at=pass_at_ks(results, ks),
        results=results,
    )


# ---- policies ------------------------------------------------------------------------------------------------------------
class Policy(Protocol):
    """What `evaluate` runs: a name for the report and a batch of episodes on fixed seeds."""

    name: str

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, **kwargs: Any) -> list[EpisodeResult]: ...


class ScriptedPolicy:
    """The env's oracle, or the random and passive baselines that validate every generated env
    (`trace_envs.generate.policies`): the same policies `trace-envs check` uses."""

    kinds = SCRIPTED_KINDS

    def __init__(self, kind: str):
        """`kind`: oracle, random or passive."""
        if kind not in self.kinds:
            raise ValueError(f"scripted policy must be one of {', '.join(self.kinds)}, got {kind!r}")
        self.kind = kind

    @property
    def name(self) -> str:
        return f"scripted:{self.kind}"

    def episode(self, env_id: str, seed: int, sample: int) -> EpisodeResult:
        """Play one episode on the scenario of `seed`; `sample` varies the random policy's own draws."""
        import gymnasium as gym

        from trace_envs.generate.policies import passive_action, random_action, run_policy, run_scripted

        env = gym.make(env_id)
        base = env.unwrapped
        if self.kind == "oracle":
            score, info = run_scripted(base, "oracle", seed)
        else:
            policy = random_action if self.kind == "random" else passive_action
            score, info = run_policy(base, policy, seed, sample=sample)
        reasons, messages = dict(base.score().reasons), base.messages
        env.close()
        return EpisodeResult(seed, sample, float(score), bool(info.get("success")), dict(info.get("reward_breakdown", {})),
                             int(info.get("turn", 0)), reasons=reasons, messages=messages)

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, **_: Any) -> list[EpisodeResult]:
        return [self.episode(env_id, s, j) for s in seeds for j in range(samples)]


def scripted_policy(spec: str) -> ScriptedPolicy:
    """`scripted:oracle|random|passive` as a policy (a ValueError for any other text)."""
    kind, sep, rest = spec.partition(":")
    if kind != "scripted" or not sep:
        raise ValueError(f"not a scripted policy: {spec!r} (use scripted:{'|'.join(SCRIPTED_KINDS)})")
    return ScriptedPolicy(rest)


def evaluate(env_id: str, policy: Policy | str, episodes: int = 50, *, samples: int = 1,
             seed_offset: int = EVAL_SEED_OFFSET, **rollout_kwargs: Any) -> EvalReport:
    """Run `episodes` fixed seeds (`seed_offset`, ...) x `samples` rollouts of `policy` and summarize.

    Args:
        env_id: an env id or bare name (`trace_envs.registry.resolve_env_id`: Gymnasium's NameNotFound if unknown).
        policy: a policy object, or the text `scripted:oracle|random|passive` (model policies: `adapters_train`).
        episodes: how many consecutive seeds. samples: rollouts per seed (pass@k needs k).
        seed_offset: the first seed; the default is the held-out range that training never draws from.
        rollout_kwargs: passed to the policy's `rollouts` (e.g. `progress=True` for chat policies).
    """
    from trace_envs.registry import resolve_env_id

    env_id = resolve_env_id(env_id)
    pol = scripted_policy(policy) if isinstance(policy, str) else policy
    seeds = list(range(seed_offset, seed_offset + episodes))
    results = pol.rollouts(env_id, seeds, samples, **rollout_kwargs)
    return summarize(env_id, pol.name, results, episodes, samples, seed_offset)
