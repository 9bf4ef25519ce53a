"""Data-parallel training helpers: what differs when `train` runs under `torchrun` or `accelerate launch`.

The trainers themselves (TRL's GRPOTrainer and SFTTrainer over accelerate) shard each global batch across the ranks
and all-reduce the gradients; this module holds the few things trace-envs adds on top: rank-0-only side effects and
a debug dump that lets a test (or a user) check that the ranks really trained one model.

Debug option: with `TRACE_ENVS_DEBUG_DIR=DIR` in the environment, every rank writes `DIR/rank<N>.json` after GRPO
training: its rank and world size, the sha256 of its LoRA tensors (equal on every rank of a data-parallel job), the
number of LoRA tensors, per step the scenario seeds its envs were reset with (one GRPO group = one seed), per
generation batch which of its rollouts saw the expert hint, and whether it wrote the adapter.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

DEBUG_DIR_ENV = "TRACE_ENVS_DEBUG_DIR"


def lora_checksum(model: Any) -> tuple[str, int]:
    """sha256 over the trainable LoRA tensors of a PEFT model (names and bytes, in name order) and their count.

    `model`: a PEFT model, unwrapped (not the DDP wrapper, whose names carry a `module.` prefix)."""
    from peft import get_peft_model_state_dict

    state = get_peft_model_state_dict(model)
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().to("cpu").contiguous()
        digest.update(name.encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest(), len(state)


def seed_recorder(trainer: Any) -> Any:
    """A TrainerCallback that records, at the end of each step, the scenario seed of every env instance this rank's
    trainer reset for that step's rollouts (`trainer.environments`, through Gymnasium's `np_random_seed`)."""
    from transformers import TrainerCallback

    class SeedRecorder(TrainerCallback):
        def __init__(self) -> None:
            self.steps: list[list[int | None]] = []

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            envs = getattr(trainer, "environments", None) or []
            self.steps.append([getattr(getattr(e, "base", None), "np_random_seed", None) for e in envs])

    return SeedRecorder()


def debug_dir() -> Path | None:
    """The folder named by TRACE_ENVS_DEBUG_DIR, or None when the debug dump is off."""
    value = os.environ.get(DEBUG_DIR_ENV)
    return Path(value) if value else None


def write_debug_dump(trainer: Any, recorder: Any, folder: Path, *, saved_adapter: bool) -> Path:
    """Write this rank's `rank<N>.json` (see the module doc) into `folder`; returns its path.

    `recorder`: the `seed_recorder` callback that ran with the trainer (None: no seeds recorded); `saved_adapter`:
    whether this rank wrote the adapter folder."""
    acc = trainer.accelerator
    checksum, count = lora_checksum(trainer.model)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rank{acc.process_index}.json"
    data = {
        "rank": acc.process_index,
        "world_size": acc.num_processes,
        "lora_sha256": checksum,
        "lora_tensors": count,
        "step_seeds": recorder.steps if recorder is not None else [],
        "step_hints": list(getattr(trainer, "hint_log", [])),
        "saved_adapter": saved_adapter,
    }
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
