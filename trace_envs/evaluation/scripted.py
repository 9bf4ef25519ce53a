"""Scripted policies, which need no model: they act on the Gymnasium env itself (`env.step(action)`). The oracle
replays the scenario's oracle actions, random makes type-correct random tool calls and random remarks, passive only
talks: the same policies `trace-envs check` validates every generated env with (`trace_envs.generate.policies`)."""

from __future__ import annotations

from typing import Any, Sequence

from trace_envs.evaluation.results import EpisodeResult

SCRIPTED_KINDS = ("oracle", "random", "passive")


class ScriptedPolicy:
    """The env's oracle, or the random or passive baseline."""

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
