"""adapters_train: one LoRA adapter per capability, trained with GRPO (TRL + PEFT) against a registered `trace/*` env
through the TRL bridge (`trace_envs.integrations.trl`), with an SFT warm start on oracle episodes, model-backed
policies (`hf:`, `routed:`, `openai:`) and difficulty calibration. It implements the library's training seam
(`trace_envs.training.Training`, in `adapters_train.provider`), through which the CLI and the `run` pipeline reach it;
the library never imports this package. The options (`TrainConfig`) and evaluation (`evaluate`, every policy kind)
are the library's.

    from adapters_train import TrainConfig, train_grpo
    from adapters_train.calibrate import calibrate
    from trace_envs.evaluation import evaluate

    res = train_grpo(TrainConfig(env_id="trace/<name>", model="smollm2", steps=160))
    print(evaluate("trace/<name>", f"hf:smollm2+{res.adapter_dir}", episodes=50).format())
    print(calibrate("trace/<name>", "hf:smollm2", groups=16, k=8).format())

Imports are lazy so that `import adapters_train` stays cheap; the training stack is needed only when training.
"""

from __future__ import annotations

from typing import Any

from trace_envs.evaluation import EVAL_SEED_OFFSET
from trace_envs.training import TrainConfig, load_config

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
