"""TRL and PEFT configs from a `TrainConfig` (`trace_envs.training`): GRPOConfig, LoraConfig and SFTConfig, with the
defaults a machine without a GPU needs, and every option of the config's `grpo:`, `lora:` and `sft:` sections passed
through (an unknown one is a ValueError naming it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from trace_envs.training import TrainConfig


def _check_kwargs(cls: type, kwargs: dict[str, Any], what: str) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(kwargs) - names)
    if unknown:
        raise ValueError(f"unknown {what} option(s): {', '.join(unknown)}")


def _cpu_defaults() -> dict[str, Any]:
    """Options for a machine without a GPU.

    - No gradient checkpointing: recomputing activations only costs time, and small models fit.
    - `use_cpu`: under `torchrun` / `accelerate launch` (LOCAL_RANK set) without it, accelerate finds no device
      backend, still initialises a process group, but marks the run as not distributed; every rank then trains as an
      independent copy. With it, the ranks form one data-parallel job over gloo.
    """
    import torch
    from transformers import TrainingArguments

    if torch.cuda.is_available():
        return {}
    # transformers 5 renamed the option (the old name still works, with a FutureWarning on every trainer)
    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    key = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    return {key: False, "use_cpu": True}


def cpu_has_native_bf16() -> bool:
    """Whether this machine trains faster in bf16 than in fp32: no GPU, and a CPU with AVX512-BF16 or AMX (without
    them bf16 is emulated and slower)."""
    import torch

    if torch.cuda.is_available():
        return False
    cpu = torch.cpu
    checks = [getattr(cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(check() for check in checks if check is not None)


def make_grpo_config(cfg: TrainConfig, output_dir: str | Path, max_turns: int | None = None) -> Any:
    from trl import GRPOConfig

    kwargs: dict[str, Any] = {
        "output_dir": str(output_dir),
        "max_steps": cfg.steps,
        "num_generations": cfg.num_generations,
        "per_device_train_batch_size": cfg.num_generations * cfg.prompts_per_step,
        "gradient_accumulation_steps": 1,
        "learning_rate": cfg.learning_rate,
        "temperature": cfg.temperature,
        "max_tool_calling_iterations": cfg.max_tool_calling_iterations or max_turns,
        "logging_steps": cfg.logging_steps,
        "save_strategy": "no",
        "report_to": "none",
        "seed": cfg.seed,
        "bf16": cfg.bf16,
        "disable_tqdm": True,
        **_cpu_defaults(),
    }
    if cfg.max_completion_length is not None:  # None: train_grpo sizes it from the env (completion_budget)
        kwargs["max_completion_length"] = cfg.max_completion_length
    _check_kwargs(GRPOConfig, cfg.grpo, "GRPOConfig")
    kwargs.update(cfg.grpo)
    return GRPOConfig(**kwargs)


def make_lora_config(cfg: TrainConfig) -> Any:
    from peft import LoraConfig

    kwargs: dict[str, Any] = {
        "r": cfg.lora_r,
        "lora_alpha": cfg.lora_alpha,
        "lora_dropout": cfg.lora_dropout,
        "target_modules": cfg.target_modules,
        "task_type": "CAUSAL_LM",
    }
    _check_kwargs(LoraConfig, cfg.lora, "LoraConfig")
    kwargs.update(cfg.lora)
    return LoraConfig(**kwargs)


def make_sft_config(cfg: TrainConfig, output_dir: str | Path, max_length: int | None = 4096) -> Any:
    """TRL's SFTConfig for the warm start; `max_length`: the sequence length (the `sft:` section still overrides)."""
    from trl import SFTConfig

    kwargs: dict[str, Any] = {
        "output_dir": str(output_dir),
        "num_train_epochs": cfg.sft_epochs,
        # One sequence at a time, accumulated to the batch size: a batch of long conversations materialises
        # batch x length x vocabulary logits (several GB each for a 49k-token vocabulary) and can exhaust memory.
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": cfg.sft_batch_size,
        "learning_rate": cfg.sft_learning_rate,
        "logging_steps": cfg.logging_steps,
        "save_strategy": "no",
        "report_to": "none",
        "seed": cfg.seed,
        "bf16": cfg.bf16,
        "max_length": max_length,
        "disable_tqdm": True,
        **_cpu_defaults(),
    }
    _check_kwargs(SFTConfig, cfg.sft, "SFTConfig")
    kwargs.update(cfg.sft)
    return SFTConfig(**kwargs)
