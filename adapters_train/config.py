"""Training configuration: the defaults (LoRA rank 16 on all linear layers, GRPO groups of 8) and the config file
that reaches every TRL option.

A config file is YAML or JSON. Top-level keys that name a `TrainConfig` field set it; the sections `grpo:`, `lora:`
and `sft:` are passed as keyword arguments to TRL's `GRPOConfig`, PEFT's `LoraConfig` and TRL's `SFTConfig`; any other
top-level key is taken as a `GRPOConfig` argument, so a flat mapping of GRPOConfig kwargs works as is::

    steps: 200
    num_generations: 8
    grpo:
      use_vllm: true
      vllm_mode: server        # or colocate
      gradient_accumulation_steps: 4
      bf16: true
    lora:
      r: 32
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainConfig:
    env_id: str = ""
    model: str = "smollm2"
    out: str = "adapters"
    # GRPO (the paper's recipe: groups of 8 rollouts from one start state, LoRA r=16 on every linear layer; 160 steps
    # of one group is 1,280 rollouts per capability, 5,120 for four capabilities)
    steps: int = 160
    num_generations: int = 8
    prompts_per_step: int = 1
    learning_rate: float = 1e-5
    temperature: float = 1.0
    max_completion_length: int = 512
    max_tool_calling_iterations: int | None = None  # None: the env's max_turns knob
    train_seed_start: int = 0
    seed: int = 0
    logging_steps: int = 1
    # bf16 autocast for the training steps (SFT and GRPO). On a CPU with native bf16 (AVX512-BF16 or AMX) a
    # SmolLM2 SFT step is about 1.4x faster; see `cpu_has_native_bf16`.
    bf16: bool = False
    chat_template: str | None = None
    user_tool: bool = True
    # LoRA
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"
    # SFT warm start on oracle episodes
    warm_start: bool = False
    sft_episodes: int = 64
    sft_epochs: float = 2.0
    sft_learning_rate: float = 2e-4
    sft_batch_size: int = 4
    # pass-through option mappings
    grpo: dict[str, Any] = field(default_factory=dict)
    lora: dict[str, Any] = field(default_factory=dict)
    sft: dict[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def read_mapping(path: str | Path) -> dict[str, Any]:
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith(".json"):
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config file must hold a mapping")
    return data


def load_config(path: str | Path | None, base: TrainConfig | None = None, **overrides: Any) -> TrainConfig:
    """A TrainConfig from a YAML/JSON file (see module doc), then explicit `overrides` (None values ignored)."""
    cfg = base or TrainConfig()
    if path:
        data = read_mapping(path)
        names = {f.name for f in dataclasses.fields(TrainConfig)}
        known = {k: v for k, v in data.items() if k in names and k not in ("grpo", "lora", "sft")}
        grpo = dict(data.get("grpo") or {})
        grpo.update({k: v for k, v in data.items() if k not in names})
        cfg = cfg.replace(**known)
        cfg = dataclasses.replace(
            cfg,
            grpo={**cfg.grpo, **grpo},
            lora={**cfg.lora, **(data.get("lora") or {})},
            sft={**cfg.sft, **(data.get("sft") or {})},
        )
    return cfg.replace(**overrides)


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
        "max_completion_length": cfg.max_completion_length,
        "max_tool_calling_iterations": cfg.max_tool_calling_iterations or max_turns,
        "logging_steps": cfg.logging_steps,
        "save_strategy": "no",
        "report_to": "none",
        "seed": cfg.seed,
        "bf16": cfg.bf16,
        "disable_tqdm": True,
        **_cpu_defaults(),
    }
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
