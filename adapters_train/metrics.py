"""What a training run shows and keeps: one progress line per optimizer step on stderr, every trainer log in a JSONL
metrics file instead of on the console, and a reward-curve PNG.

A run of `train_grpo` for the adapter folder `adapters/<name>` writes `adapters/<name>.metrics.jsonl` (one object per
logged step: `phase` "sft" or "grpo", `step`, and every figure the trainer logged) and `adapters/<name>.reward.png`.
"""

from __future__ import annotations

import io
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from trace_envs.atomic import write_bytes_atomic


def metrics_paths(adapter_dir: str | Path) -> tuple[Path, Path]:
    """The metrics file and the reward-curve PNG of the adapter saved in `adapter_dir` (beside it, so that the atomic
    swap that publishes the adapter never drops them)."""
    target = Path(adapter_dir)
    return target.parent / f"{target.name}.metrics.jsonl", target.parent / f"{target.name}.reward.png"


def progress_line(msg: str) -> None:
    """One progress line on stderr, flushed at once (the console's view of a run; stdout stays for results)."""
    print(msg, file=sys.stderr, flush=True)


def _number(value: Any) -> Any:
    """A log value as JSON: floats stay numbers (NaN and infinities become null), everything else as it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def quiet(trainer: Any) -> None:
    """Stop the trainer printing its raw log dicts (`{'loss': ...}`) and tqdm bars: `metrics_callback` keeps them."""
    from transformers import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)


def metrics_callback(path: Path, phase: str) -> Any:
    """A TrainerCallback that appends every log of the main process to `path` as one JSON line.

    Args:
        path: the JSONL file (created if missing, appended to: the SFT warm start and GRPO share one file).
        phase: written into each line ("sft", "grpo") so one file holds a whole warm-started run.
    """
    from transformers import TrainerCallback

    class MetricsFile(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if not logs or not state.is_world_process_zero:
                return
            row = {"phase": phase, "step": int(state.global_step), "time": round(time.time(), 3),
                   **{k: _number(v) for k, v in logs.items()}}
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, default=str) + "\n")

    return MetricsFile()


def step_progress_callback(phase: str, loss_key: str | None = "loss") -> Any:
    """A TrainerCallback that prints one line per optimizer step on the main process: `[phase] step k/N`, with the
    loss when the step was logged (`loss_key`; None when another callback already prints the logged steps)."""
    from transformers import TrainerCallback

    class StepProgress(TrainerCallback):
        def __init__(self) -> None:
            self.t0 = time.perf_counter()

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.t0 = time.perf_counter()

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if not logs or loss_key is None or loss_key not in logs or not state.is_world_process_zero:
                return
            progress_line(f"[{phase}] step {state.global_step}/{state.max_steps}: {loss_key} {float(logs[loss_key]):.4f}  "
                 f"({time.perf_counter() - self.t0:.0f}s)")

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            # Logged steps print from on_log (which runs after this, so wait for it); the others print here.
            logging_steps = max(int(getattr(args, "logging_steps", 1) or 1), 1)
            if state.is_world_process_zero and state.global_step % logging_steps:
                progress_line(f"[{phase}] step {state.global_step}/{state.max_steps}  ({time.perf_counter() - self.t0:.0f}s)")

    return StepProgress()


def reward_curve(rewards: list[float], informative: list[float], path: Path, title: str) -> Path:
    """Draw the mean group reward per logged GRPO step (with a moving average from 5 steps) and the share of
    informative groups into a PNG at `path` (matplotlib's Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = list(range(1, len(rewards) + 1))
    ax.plot(steps, rewards, marker="o", label="mean group reward")
    if len(rewards) >= 5:
        w = 5
        smooth = [sum(rewards[max(0, i - w + 1): i + 1]) / len(rewards[max(0, i - w + 1): i + 1]) for i in range(len(rewards))]
        ax.plot(steps, smooth, label="moving average (5)")
    ax.plot(steps, informative, linestyle=":", label="share of informative groups")
    ax.set_xlabel("GRPO step")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    return write_bytes_atomic(path, buffer.getvalue())  # a kill mid-run leaves the old curve or the new, whole
