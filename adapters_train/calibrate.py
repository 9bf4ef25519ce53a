"""Calibration of an env's difficulty for a policy: is GRPO going to get a signal from it?

G groups (one seed each) of k rollouts: mean reward, success rate, reward std, the share of groups that are
all-success / all-zero / constant (no gradient) / informative (rewards differ), pass@1/4/8/16, and a verdict with the
spec knob to turn (knobs: difficulty, distractors, entities, requests, hint_rate).

With a hint fraction, each group is a hinted GRPO group (the first `hinted_count(k, f)` rollouts see the env's expert
hint, the others do not): the report gives hinted and plain success apart, the share of informative groups with and
without the hinted rollouts, and the hint fraction to train with (the paper aims at 60-80% success on hinted rollouts)."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from trace_envs.evaluation import EpisodeResult, PolicyOptions, build_policy, group_by_seed, pass_at_ks

CALIBRATION_SEED_OFFSET = 2_000_000
# A GRPO group samples its rollouts, so calibration does too unless told otherwise.
CALIBRATION_TEMPERATURE = 1.0


@dataclass
class CalibrationReport:
    env_id: str
    policy: str
    groups: int
    k: int
    mean_reward: float
    success_rate: float
    reward_std: float
    share_all_success: float
    share_all_zero: float
    share_constant: float
    share_informative: float
    pass_at: dict[str, float]
    verdict: str
    advice: str
    hint_fraction: float = 0.0
    hinted_per_group: int = 0
    success_hinted: float | None = None
    success_plain: float | None = None
    share_informative_plain: float | None = None
    suggested_hint_fraction: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self) -> str:
        lines = [
            f"env: {self.env_id}",
            f"policy: {self.policy}",
            f"groups: {self.groups} x {self.k} rollouts",
            f"mean_reward: {self.mean_reward:.3f}",
            f"success_rate: {self.success_rate:.3f}",
            f"reward_std: {self.reward_std:.3f}",
            f"groups_all_success: {self.share_all_success:.3f}",
            f"groups_all_zero: {self.share_all_zero:.3f}",
            f"groups_constant: {self.share_constant:.3f}",
            f"groups_informative: {self.share_informative:.3f}",
        ]
        lines += [f"{k}: {v:.3f}" for k, v in self.pass_at.items()]
        if self.hinted_per_group:
            lines += [
                f"hint_fraction: {self.hint_fraction:.3f} ({self.hinted_per_group} of {self.k} rollouts hinted)",
                f"success_hinted: {_fmt(self.success_hinted)}",
                f"success_plain: {_fmt(self.success_plain)}",
                f"groups_informative_plain_only: {_fmt(self.share_informative_plain)}",
                f"suggested_hint_fraction: {_fmt(self.suggested_hint_fraction)}",
            ]
            if hint_does_not_help(self.success_hinted, self.success_plain):
                lines.append("hint_note: hinted rollouts did no better than plain ones, so the hint does not help this "
                             "policy: train without it (--hint-fraction 0), after a warm start if plain groups are "
                             "all zero")
        lines += [f"verdict: {self.verdict}", f"advice: {self.advice}"]
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def suggest_hint_fraction(success_hinted: float | None, informative_plain: float | None,
                          success_plain: float | None = None) -> float:
    """The hint fraction to train with: none when plain groups already carry a gradient, or when hinted rollouts do
    no better than plain ones (the hint does not help this policy: SmolLM2-135M after a warm start succeeded on 0 of
    16 hinted hand-off rollouts and 2 of 16 plain ones); half the group when hinted rollouts still mostly fail (more of
    them, so that a group holds a success); the paper's low end when hinted rollouts succeed often enough (60% and
    up); the middle otherwise."""
    if informative_plain is not None and informative_plain >= 0.5:
        return 0.0
    if hint_does_not_help(success_hinted, success_plain):
        return 0.0
    if success_hinted is None or success_hinted < 0.3:
        return 0.5
    return 0.25 if success_hinted >= 0.6 else 0.375


def hint_does_not_help(success_hinted: float | None, success_plain: float | None) -> bool:
    return success_hinted is not None and success_plain is not None and success_hinted <= success_plain


def verdict_for(success_rate: float, informative: float, all_success: float, all_zero: float) -> tuple[str, str]:
    """(verdict, advice). Trainable when enough groups carry a gradient; else too easy or too hard, with the knob."""
    if informative >= 0.25 and 0.02 <= success_rate <= 0.95:
        return "trainable", "keep the knobs; GRPO gets a signal from most batches"
    if all_success >= all_zero and success_rate > 0.5:
        return "too easy", (
            "raise knobs.difficulty (easy -> medium -> hard), add knobs.distractors or knobs.entities, "
            "raise knobs.requests for multi-request families, and set knobs.hint_rate to 0"
        )
    return "too hard", (
        "raise knobs.hint_rate (e.g. 0.3-0.5), lower knobs.difficulty, cut knobs.distractors / knobs.entities / "
        "knobs.requests, or warm-start the model first (trace-envs sft / train --warm-start)"
    )


def _informative(groups: list[list[EpisodeResult]]) -> float | None:
    usable = [g for g in groups if len(g) >= 2]
    if not usable:
        return None
    return sum(len({round(r.reward, 9) for r in g}) > 1 for g in usable) / len(usable)


def _success(results: list[EpisodeResult]) -> float | None:
    return sum(r.passed for r in results) / len(results) if results else None


def summarize_groups(env_id: str, policy: str, results: list[EpisodeResult], k: int,
                     hint_fraction: float = 0.0) -> CalibrationReport:
    from adapters_train.hints import hinted_count

    groups = list(group_by_seed(results).values())
    rewards = [r.reward for r in results]
    n_groups = max(len(groups), 1)
    all_success = sum(all(r.passed for r in g) for g in groups) / n_groups
    all_zero = sum(all(r.reward == 0.0 for r in g) for g in groups) / n_groups
    constant = sum(len({round(r.reward, 9) for r in g}) == 1 for g in groups) / n_groups
    informative = 1.0 - constant
    success = sum(r.passed for r in results) / max(len(results), 1)
    verdict, advice = verdict_for(success, informative, all_success, all_zero)
    hinted = [r for r in results if r.hinted]
    plain = [r for r in results if not r.hinted]
    plain_groups = [[r for r in g if not r.hinted] for g in groups]
    informative_plain = _informative(plain_groups)
    per_group = hinted_count(k, hint_fraction)
    return CalibrationReport(
        env_id=env_id,
        policy=policy,
        groups=len(groups),
        k=k,
        mean_reward=sum(rewards) / max(len(rewards), 1),
        success_rate=success,
        reward_std=statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
        share_all_success=all_success,
        share_all_zero=all_zero,
        share_constant=constant,
        share_informative=informative,
        pass_at=pass_at_ks(results, (1, 4, 8, 16)),
        verdict=verdict,
        advice=advice,
        hint_fraction=hint_fraction,
        hinted_per_group=per_group,
        success_hinted=_success(hinted),
        success_plain=_success(plain),
        share_informative_plain=informative_plain,
        suggested_hint_fraction=suggest_hint_fraction(_success(hinted), informative_plain, _success(plain))
        if per_group else None,
    )


def calibrate(env_id: str, policy: Any, groups: int = 16, k: int = 8, *, seed_offset: int = CALIBRATION_SEED_OFFSET,
              progress: bool = False, hint_fraction: float | None = None, max_turns: int | None = None,
              **opts: Any) -> CalibrationReport:
    """Sample `groups` groups of `k` rollouts of `policy` (an object, or its text for
    `trace_envs.evaluation.build_policy`; `opts` are its `PolicyOptions`, None values ignored, a model policy
    sampling at `CALIBRATION_TEMPERATURE` unless told otherwise). `hint_fraction`: hint that share of every group
    (a model policy; a scripted one plays the same with or without). `max_turns`: assistant turns per rollout of a
    model policy (None: the env's)."""
    from adapters_train.hints import hinted_count

    import trace_envs  # noqa: F401

    if isinstance(policy, str):
        given = {k: v for k, v in opts.items() if v is not None}
        pol = build_policy(policy, PolicyOptions(**{"temperature": CALIBRATION_TEMPERATURE, **given}))
    else:
        pol = policy
    seeds = list(range(seed_offset, seed_offset + groups))
    fraction = float(hint_fraction or 0.0)
    extra: dict[str, Any] = {"progress": progress} if progress else {}
    if max_turns is not None:
        extra["max_turns"] = max_turns
    if hinted_count(k, fraction):
        extra["hinted"] = hinted_count(k, fraction)
    results = pol.rollouts(env_id, seeds, k, **extra)
    return summarize_groups(env_id, pol.name, results, k, fraction)
