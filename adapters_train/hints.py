"""Expert hints inside a GRPO group, as the TRACE paper trains: a share of each group's rollouts sees the env's hint in
its system prompt, and the gradient step is computed on the plain prompt (the hint swapped out), so the policy learns
to act without a hint it will not have at deployment.

Why it matters: a group whose rollouts all fail (or all succeed) has zero advantage and carries no gradient. A model
that never exercises the capability fails every rollout; with the hint on a quarter to a half of them some succeed,
the group's rewards differ, and the plain rollouts' actions are pushed toward the hinted ones'.

`with_hints(GRPOTrainer, 0.25)` returns a subclass of any GRPOTrainer (TRL's, a test's scripted one) that does this
around TRL's `_generate`: it runs on every rank of a `torchrun` job alike, with any generation backend (transformers
or vLLM), because it changes only the prompts generation sees and the prompt ids it hands back."""

from __future__ import annotations

import copy
from typing import Any

from trace_envs.language.hints import section


def hinted_count(group_size: int, fraction: float) -> int:
    """How many rollouts of a group of `group_size` see the hint: the nearest whole share, at least one when the
    fraction is above zero, and never the whole group (a group without a plain rollout teaches nothing plain)."""
    if fraction <= 0 or group_size < 2:
        return 0
    return min(group_size - 1, max(1, int(fraction * group_size + 0.5)))


def hinted_prompt(prompt: list[dict[str, Any]], hint: str) -> list[dict[str, Any]]:
    """The chat prompt with the hint appended to its system message (one is added when there is none)."""
    out = copy.deepcopy(prompt)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{section(hint)}"
    else:
        out.insert(0, {"role": "system", "content": section(hint)})
    return out


def _hint_text(env: Any) -> str:
    base = getattr(env, "base", None)
    return str(getattr(base, "hint_text", "") or "")


def with_hints(base: type, fraction: float) -> type:
    """A subclass of the GRPOTrainer class `base` that hints `hinted_count(num_generations, fraction)` rollouts of
    every group (the first ones of the group, in the sampler's order) and computes the loss on the plain prompt.

    It records, per generation batch of this rank, which rollouts were hinted (`hint_log`) and logs the mean reward
    of hinted and plain rollouts apart (`hints/reward_hinted`, `hints/reward_plain`) and the hinted share
    (`hints/hinted_share`)."""
    import torch

    class HintedGRPOTrainer(base):  # type: ignore[misc, valid-type]
        hint_fraction = float(fraction)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.hint_log: list[list[bool]] = []

        def _hint_flags(self, prompts: list[Any]) -> list[bool]:
            group = self.num_generations if self.model.training else self.num_generations_eval
            k = hinted_count(int(group or 0), self.hint_fraction)
            envs = getattr(self, "environments", None) or []
            if not k or len(envs) != len(prompts):
                return [False] * len(prompts)
            # TRL keeps a group's rollouts adjacent and splits whole generation batches across the ranks, so a
            # rollout's place in its group follows from its place in the job's batch.
            offset = self.accelerator.process_index * len(prompts)
            return [(offset + i) % group < k and bool(_hint_text(envs[i])) for i in range(len(prompts))]

        def _generate(self, prompts: list[Any]):  # noqa: ANN202 (TRL's tuple)
            flags = self._hint_flags(prompts)
            if not any(flags):
                out = super()._generate(prompts)
            else:
                envs = self.environments
                shown = [hinted_prompt(p, _hint_text(envs[i])) if flags[i] else p for i, p in enumerate(prompts)]
                out = super()._generate(shown)
                plain_ids = self._tokenize_prompts(copy.deepcopy(prompts))[0]
                out = (plain_ids, *out[1:])
            self._log_hints(flags)
            return out

        def _log_hints(self, flags: list[bool]) -> None:
            mode = "train" if self.model.training else "eval"
            self.hint_log.append(list(flags))
            envs = getattr(self, "environments", None) or []
            device = self.accelerator.device
            scores = [float(e._score().score) if hasattr(e, "_score") else float("nan") for e in envs]
            if len(scores) != len(flags):
                return
            flag_t = self.accelerator.gather(torch.tensor(flags, dtype=torch.bool, device=device))
            score_t = self.accelerator.gather(torch.tensor(scores, dtype=torch.float32, device=device))
            self._metrics[mode]["hints/hinted_share"].append(flag_t.float().mean().item())
            for name, mask in (("hinted", flag_t), ("plain", ~flag_t)):
                if bool(mask.any()):
                    self._metrics[mode][f"hints/reward_{name}"].append(score_t[mask].mean().item())

    HintedGRPOTrainer.__name__ = HintedGRPOTrainer.__qualname__ = f"Hinted{base.__name__}"
    return HintedGRPOTrainer
