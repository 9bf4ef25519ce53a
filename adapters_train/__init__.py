"""adapters_train: one LoRA adapter per capability, trained with GRPO (TRL + PEFT) against a registered `trace/*` env
through the TRL bridge (`trace_envs.integrations.trl`), with an SFT warm start on oracle episodes, model-backed
policies (`hf:`, `routed:`, `openai:`) and their evaluation, and difficulty calibration. Scripted evaluation (no model)
is `trace_envs.evaluation`; the `run` pipeline is `trace_envs.pipeline`.

    from adapters_train import TrainConfig, train_grpo
    from adapters_train.evaluate import evaluate
    from adapters_train.calibrate import calibrate

    res = train_grpo(TrainConfig(env_id="trace/<name>", model="smollm2", steps=160))
    print(evaluate("trace/<name>", f"hf:smollm2+{res.adapter_dir}", episodes=50).format())
    print(calibrate("trace/<name>", "hf:smollm2", groups=16, k=8).format())

Imports are lazy so that `import adapters_train` stays cheap; the training stack is needed only when training.
"""

from __future__ import annotations

from typing import Any

from adapters_train.config import TrainConfig, load_config
from trace_envs.evaluation import EVAL_SEED_OFFSET

__all__ = [
    "EVAL_SEED_OFFSET",
    "TrainConfig",
    "load_config",
    "resolve_model",
    "train_all",
    "train_grpo",
    "train_sft",
]


def __getattr__(name: str) -> Any:
    if name in ("train_grpo", "train_all"):
        from adapters_train import grpo

        return getattr(grpo, name)
    if name == "train_sft":
        from adapters_train.sft import train_sft

        return train_sft
    if name == "resolve_model":
        from adapters_train.models import resolve_model

        return resolve_model
    raise AttributeError(name)
