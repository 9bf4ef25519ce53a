"""Calibration of an env's difficulty for a policy: is GRPO going to get a signal from it?

G groups (one seed each) of k rollouts: mean reward, success rate, reward std, the share of groups that are
all-success / all-zero / constant (no gradient) / informative (rewards differ), pass@1/4/8/16, and a verdict with the
spec knob to turn (knobs: difficulty, distractors, entities, requests, hint_rate)."""

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
        lines += [f"verdict: {self.verdict}", f"advice: {self.advice}"]
        return "\n".join(lines)


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


def summarize_groups(env_id: str, policy: str, results: list[EpisodeResult], k: int) -> CalibrationReport:
    groups = list(group_by_seed(results).values())
    rewards = [r.reward for r in results]
    n_groups = max(len(groups), 1)
    all_success = sum(all(r.passed for r in g) for g in groups) / n_groups
    all_zero = sum(all(r.reward == 0.0 for r in g) for g in groups) / n_groups
    constant = sum(len({round(r.reward, 9) for r in g}) == 1 for g in groups) / n_groups
    informative = 1.0 - constant
    success = sum(r.passed for r in results) / max(len(results), 1)
    verdict, advice = verdict_for(success, informative, all_success, all_zero)
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
    )


def calibrate(env_id: str, policy: Any, groups: int = 16, k: int = 8, *, seed_offset: int = CALIBRATION_SEED_OFFSET,
              progress: bool = False, **opts: Any) -> CalibrationReport:
    """Sample `groups` groups of `k` rollouts of `policy` (an object, or its text for
    `trace_envs.evaluation.build_policy`; `opts` are its `PolicyOptions`, None values ignored, a model policy
    sampling at `CALIBRATION_TEMPERATURE` unless told otherwise)."""
    import trace_envs  # noqa: F401

    if isinstance(policy, str):
        given = {k: v for k, v in opts.items() if v is not None}
        pol = build_policy(policy, PolicyOptions(**{"temperature": CALIBRATION_TEMPERATURE, **given}))
    else:
        pol = policy
    seeds = list(range(seed_offset, seed_offset + groups))
    results = pol.rollouts(env_id, seeds, k, **({"progress": progress} if progress else {}))
    return summarize_groups(env_id, pol.name, results, k)
