"""This package's implementation of the library's training seam (`trace_envs.training.Training`), declared in
pyproject.toml as the entry point `trace_envs.training: adapters_train`. Importing it is cheap: the training stack is
imported inside each method, after `require_stack` has said what is missing."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

from trace_envs.evaluation import Policy, PolicyOptions, PolicySpec
from trace_envs.training import Hardware, TrainConfig, TrainingUnavailable, TrainResult
from trace_envs.training.seam import INSTALL, LoadedModel, Report

STACK = ("torch", "transformers", "trl", "peft")


def quiet_console() -> None:
    """Keep the console to progress lines: no notice that TRL's environment_factory is experimental, no dataset
    preprocessing bars, no tokenizer fork warnings (the trainers' own logs go to the metrics file). Set before the
    stack is imported; a value the user set stays."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    # raised from inside TRL / PEFT on every trainer; nothing a user of the CLI can change
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)


class AdaptersTraining:
    """GRPO and SFT with TRL + PEFT, Hugging Face, routed and OpenAI-compatible policies, and calibration."""

    def require_stack(self) -> None:
        quiet_console()
        import importlib

        for name in STACK:
            try:
                importlib.import_module(name)
            except ImportError as exc:
                raise TrainingUnavailable(f"the training stack is not installed ({exc.name}): {INSTALL}") from None

    def hardware(self) -> Hardware:
        try:
            import torch
        except ImportError:  # nothing to train on here either way; sizing then errs on the small side
            return Hardware(gpu=False, cpu_bf16=False)
        from adapters_train.config import cpu_has_native_bf16

        return Hardware(gpu=torch.cuda.is_available(), cpu_bf16=cpu_has_native_bf16())

    def check_model_name(self, name: str) -> str:
        from adapters_train.models import check_model_name

        return check_model_name(name)

    def model_fetched(self, name: str) -> bool:
        from adapters_train.models import SMOLLM2_FILE, cache_dir

        return name == "smollm2" and (cache_dir() / "smollm2" / SMOLLM2_FILE).is_file()

    def load_model(self, name: str, *, chat_template: str | None = None) -> LoadedModel:
        self.require_stack()
        from adapters_train.models import resolve_model

        return resolve_model(name, chat_template=chat_template)

    def train_grpo(self, config: TrainConfig) -> TrainResult:
        self.require_stack()
        from adapters_train.grpo import train_grpo

        return train_grpo(config)

    def train_sft(self, config: TrainConfig, adapter_dir: Path | None = None) -> Path:
        self.require_stack()
        from adapters_train.sft import train_sft

        return train_sft(config, adapter_dir=adapter_dir)

    def metrics_paths(self, adapter_dir: Path) -> tuple[Path, Path]:
        from adapters_train.metrics import metrics_paths

        return metrics_paths(adapter_dir)

    def model_policy(self, spec: PolicySpec, options: PolicyOptions) -> Policy:
        if spec.kind in ("hf", "routed"):
            self.require_stack()
        quiet_console()
        from adapters_train.evaluate import model_policy

        return model_policy(spec, options)

    def calibrate(self, env_id: str, policy: str, groups: int, k: int, *, progress: bool = False,
                  hint_fraction: float | None = None, **options: Any) -> Report:
        quiet_console()
        from adapters_train.calibrate import calibrate

        return calibrate(env_id, policy, groups, k, progress=progress, hint_fraction=hint_fraction, **options)


TRAINING = AdaptersTraining()
