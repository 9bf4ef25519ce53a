"""The training options: what the library asks the training package to do, as data. `TrainOptions` are the knobs
(GRPO, LoRA, the SFT warm start), each with its one default and range check; `TrainConfig` adds what to train and
where (env, model, output folder). `trace-envs train` and `sft` build a `TrainConfig`; `trace-envs run` holds
`TrainOptions` in its `RunConfig` (under its own named preset) and adds the env, model and folder per capability.

A `train --config` file is YAML or JSON. Top-level keys that name a `TrainConfig` field set it; the sections `grpo:`,
`lora:` and `sft:` are passed as keyword arguments to TRL's `GRPOConfig`, PEFT's `LoraConfig` and TRL's `SFTConfig`;
any other top-level key is taken as a `GRPOConfig` argument, so a flat mapping of GRPOConfig kwargs works as is::

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

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.config_files import read_mapping

SECTIONS = ("grpo", "lora", "sft")


class TrainOptions(BaseModel):
    """How one adapter is trained: GRPO (the paper's recipe by default: groups of 8 rollouts from one start state,
    LoRA rank 16 on every linear layer, 160 steps of one group, 1,280 rollouts per capability), the LoRA, and the
    optional SFT warm start on the env's oracle episodes. `grpo`, `lora` and `sft` reach every option of TRL's
    GRPOConfig, PEFT's LoraConfig and TRL's SFTConfig."""

    model_config = ConfigDict(extra="forbid")

    # GRPO
    steps: int = Field(default=160, ge=1, description="GRPO optimizer steps.")
    num_generations: int = Field(default=8, ge=2, description="Rollouts per GRPO group (one start state per group).")
    prompts_per_step: int = Field(default=1, ge=1, description="GRPO groups per step and process.")
    learning_rate: float = Field(default=1e-5, gt=0, description="GRPO learning rate.")
    temperature: float = Field(default=1.0, ge=0, description="Sampling temperature of the rollouts.")
    max_completion_length: int | None = Field(
        default=None, ge=1, description="Token budget of one rollout's completion, tool results and user replies "
        "included (TRL's loop counts them and cuts the rollout there). None: sized from the env's oracle episodes (the "
        "longest of 8 training seeds' plus a quarter, in steps of 64 tokens), so a successful episode fits; a budget "
        "below that warns, since no rollout can then finish.")
    max_tool_calling_iterations: int | None = Field(
        default=None, ge=1, description="Tool-calling turns per rollout (None: the env's max_turns knob).")
    train_seed_start: int = Field(default=0, ge=0, description="The first scenario seed training draws (one per group).")
    seed: int = Field(default=0, description="Seed of the trainer (and of the `tiny` model's random weights).")
    logging_steps: int = Field(default=1, ge=1, description="Steps between trainer logs (metrics file, progress line).")
    bf16: bool = Field(default=False, description="bf16 autocast for the training steps (SFT and GRPO); faster on a "
                                                  "GPU, and on a CPU with AVX512-BF16 or AMX.")
    chat_template: str | None = Field(
        default=None, description="Replace the model's chat template (a TRL template name such as qwen2_5, or a "
                                  ".jinja file).")
    hint_fraction: float = Field(
        default=0.375, ge=0.0, lt=1.0, description="Share of each GRPO group's rollouts whose system prompt carries "
        "the env's expert hint (the paper's 4-8 of 16); the loss is computed on the plain prompt. 0: no hints.")
    user_tool: bool = Field(default=True, description="Offer the `send_message_to_user` tool: TRL's loop has no user "
                                                      "turn, so talking to the simulated user goes through it.")
    # LoRA
    lora_r: int = Field(default=16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(default=32, ge=1, description="LoRA alpha.")
    lora_dropout: float = Field(default=0.05, ge=0.0, lt=1.0, description="LoRA dropout (0 saves about a fifth of a "
                                                                         "CPU step).")
    target_modules: str | list[str] = Field(default="all-linear", description="The layers that carry LoRA.")
    # SFT warm start on oracle episodes
    warm_start: bool = Field(default=False, description="SFT on the env's oracle episodes first, then GRPO from that "
                                                        "adapter (for a model too weak to earn any reward at first).")
    sft_episodes: int = Field(default=64, ge=1, description="Oracle episodes of the warm start.")
    sft_epochs: float = Field(default=2.0, gt=0, description="Epochs of the warm start.")
    sft_learning_rate: float = Field(default=2e-4, gt=0, description="Learning rate of the warm start.")
    sft_batch_size: int = Field(default=4, ge=1, description="Episodes per warm-start optimizer step.")
    # pass-through option mappings
    grpo: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of TRL's GRPOConfig "
                                                                   "(use_vllm, vllm_mode, beta, ...).")
    lora: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of PEFT's LoraConfig.")
    sft: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of TRL's SFTConfig "
                                                                  "(max_length, ...).")

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (None values ignored), validated."""
        given = {k: v for k, v in changes.items() if v is not None}
        return type(self).model_validate({**self.model_dump(), **given})


class TrainConfig(TrainOptions):
    """`TrainOptions` plus what to train and where: the env, the base model and the adapters folder."""

    env_id: str = Field(default="", description="The env to train on: trace/<capability> or a bare name.")
    model: str = Field(default="smollm2", description="The base model: a local path, a hub id, smollm2 or tiny.")
    out: str = Field(default="adapters", description="Adapters folder (one sub-folder per capability).")


def config_kwargs(data: dict[str, Any], base: TrainConfig) -> dict[str, Any]:
    """The `TrainConfig` changes a config file's mapping asks for over `base`: its field keys, its sections merged
    into `base`'s, and any other key as a GRPOConfig argument (see the module doc)."""
    names = set(TrainConfig.model_fields)
    known = {k: v for k, v in data.items() if k in names and k not in SECTIONS and v is not None}
    grpo = {**dict(data.get("grpo") or {}), **{k: v for k, v in data.items() if k not in names}}
    return {**known, "grpo": {**base.grpo, **grpo}, "lora": {**base.lora, **(data.get("lora") or {})},
            "sft": {**base.sft, **(data.get("sft") or {})}}


def load_config(path: str | Path | None, base: TrainConfig | None = None, **overrides: Any) -> TrainConfig:
    """A TrainConfig from a YAML/JSON file (see the module doc) over `base`, then explicit `overrides` (None values
    ignored). Raises pydantic's ValidationError (a ValueError) naming any option out of its range."""
    cfg = base or TrainConfig()
    if path:
        cfg = cfg.replace(**config_kwargs(read_mapping(path), cfg))
    return cfg.replace(**overrides)
