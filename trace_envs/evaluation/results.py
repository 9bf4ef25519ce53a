"""What an evaluation produces: one `EpisodeResult` per (seed, sample) episode, and the `EvalReport` that
aggregates them (success rate, mean reward, per-clause scores, pass@k). Every policy kind, scripted or model-backed,
yields the same results and is summarized by the same `summarize`, so every report has one shape."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

# Held-out evaluation seeds start here; training seeds are drawn below it, so the two never overlap.
EVAL_SEED_OFFSET = 1_000_000


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
    hinted: bool = False  # the system prompt carried the env's expert hint


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
