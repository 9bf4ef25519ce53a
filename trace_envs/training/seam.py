"""The one seam between the library and a training package.

The library never imports the training package: training depends on the library, not the reverse. What the CLI and
the `run` pipeline ask of training is written down here as a protocol, `Training`, with the data both sides share
(`TrainConfig`, `TrainResult`, `Hardware`, the evaluation's `PolicySpec` and `PolicyOptions`). An installed
distribution provides the implementation through an entry point in the group `trace_envs.training`::

    [project.entry-points."trace_envs.training"]
    my_trainer = "my_package.seam:TRAINING"     # an object that implements `Training`

and `training()` loads it. This project declares its own (GRPO and SFT with TRL + PEFT, Hugging Face and
OpenAI-compatible policies, calibration); the `train` extra installs the stack it runs on. With no implementation
installed `training()` raises `TrainingUnavailable` naming the extra; with several, `TRACE_ENVS_TRAINING=NAME` picks one
by its entry point name.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from trace_envs.evaluation.options import PolicyOptions
    from trace_envs.evaluation.policy import Policy, PolicySpec
    from trace_envs.training.config import TrainConfig

ENTRY_POINT_GROUP = "trace_envs.training"
CHOICE_VARIABLE = "TRACE_ENVS_TRAINING"
INSTALL = "pip install 'trace-envs[train]'"


class TrainingUnavailable(RuntimeError):
    """No training implementation is installed, or the stack it needs (torch, transformers, trl, peft) is missing;
    the message says what to install."""


class Hardware(BaseModel):
    """What the machine trains on, for sizing a run."""

    gpu: bool = Field(description="A CUDA GPU is available.")
    cpu_bf16: bool = Field(description="No GPU, and the CPU computes bf16 natively (AVX512-BF16 or AMX), so bf16 "
                                       "autocast trains faster than fp32 (without them bf16 is emulated and slower).")


class TrainResult(BaseModel):
    """What training one adapter produced."""

    env_id: str = Field(description="The env trained on (resolved: trace/<name>).")
    adapter_dir: Path | None = Field(description="The saved adapter (None when not saved).")
    steps: int = Field(description="GRPO steps taken.")
    final_reward: float | None = Field(description="Mean reward of the last logged steps.")
    rewards: list[float] = Field(default_factory=list, description="Mean reward per logged step.")
    informative: list[float] = Field(default_factory=list, description="Share of groups whose rewards differ, per "
                                                                       "logged step (only they carry a gradient).")
    seconds: float = Field(default=0.0, description="Wall time.")
    sft_dir: Path | None = Field(default=None, description="The warm-start adapter, when there was one.")
    num_tokens: list[int] = Field(default_factory=list, description="Cumulative tokens (all ranks) per logged step.")
    main_process: bool = Field(default=True, description="False on the other ranks of a data-parallel job: they "
                                                         "neither print nor save.")
    metrics_path: Path | None = Field(default=None, description="Every trainer log of the run, one JSON line each.")
    curve_path: Path | None = Field(default=None, description="The reward-curve PNG.")


class LoadedModel(Protocol):
    """A base model ready to sample from: a transformers causal LM and its tokenizer."""

    model: Any
    tokenizer: Any
    name: str


class Report(Protocol):
    def to_dict(self) -> dict[str, Any]: ...

    def format(self) -> str: ...


@runtime_checkable
class Training(Protocol):
    """What the library asks of a training package. Methods that need the training stack raise
    `TrainingUnavailable` (naming what to install) when it is missing; bad input is a ValueError with one line."""

    def require_stack(self) -> None:
        """Raise `TrainingUnavailable` unless everything training and model sampling need is installed."""
        ...

    def hardware(self) -> Hardware:
        """The machine, for sizing a run."""
        ...

    def check_model_name(self, name: str) -> str:
        """The kind of model `name` is (say `tiny`, `path`, `hub`); a ValueError naming the valid choices when it is
        none, before anything heavy is loaded."""
        ...

    def model_fetched(self, name: str) -> bool:
        """Whether a built-in model's weights are on this machine already (`auto` picks it then)."""
        ...

    def load_model(self, name: str, *, chat_template: str | None = None) -> LoadedModel:
        """The base model `name`, ready to sample from (the model router scores with it)."""
        ...

    def train_grpo(self, config: TrainConfig) -> TrainResult:
        """Train and save one LoRA adapter on `config.env_id` with GRPO (after an SFT warm start when asked)."""
        ...

    def train_sft(self, config: TrainConfig, adapter_dir: Path | None = None) -> Path:
        """Train and save a LoRA on the env's oracle episodes; returns its folder."""
        ...

    def metrics_paths(self, adapter_dir: Path) -> tuple[Path, Path]:
        """The metrics file and the reward-curve PNG kept beside an adapter folder."""
        ...

    def model_policy(self, spec: PolicySpec, options: PolicyOptions) -> Policy:
        """A model-backed policy (`hf:`, `routed:`, `openai:`) that `trace_envs.evaluation.evaluate` can run."""
        ...

    def calibrate(self, env_id: str, policy: str, groups: int, k: int, *, progress: bool = False,
                  hint_fraction: float | None = None, **options: Any) -> Report:
        """Whether GRPO gets a signal from the env: `groups` groups of `k` rollouts of `policy`, their statistics
        and a verdict. `hint_fraction`: hint that share of every group, as training does (hinted and plain success
        apart, and the share to train with). `options`: the policy's `PolicyOptions`."""
        ...


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def training() -> Training:
    """The installed training implementation (see the module doc)."""
    found = {ep.name: ep for ep in _entry_points()}
    if not found:
        raise TrainingUnavailable(f"no training package is installed (nothing provides the entry point group "
                                  f"{ENTRY_POINT_GROUP!r}): {INSTALL}")
    chosen = os.environ.get(CHOICE_VARIABLE)
    if chosen:
        if chosen not in found:
            raise TrainingUnavailable(f"{CHOICE_VARIABLE}={chosen}: no such training implementation; installed: "
                                      f"{', '.join(sorted(found))}")
        entry = found[chosen]
    elif len(found) == 1:
        entry = next(iter(found.values()))
    else:
        raise TrainingUnavailable(f"several training implementations are installed ({', '.join(sorted(found))}): "
                                  f"set {CHOICE_VARIABLE} to the one to use")
    impl = entry.load()
    if not isinstance(impl, Training):
        raise TrainingUnavailable(f"the training implementation {entry.name} ({entry.value}) does not provide "
                                  "trace_envs.training.Training")
    return impl
