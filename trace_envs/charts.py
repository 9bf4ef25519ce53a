"""Charts of a run, as PNG files written atomically; each needs matplotlib (the `plot` extra) and is skipped without
it."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

from trace_envs.atomic import write_bytes_atomic


def before_after_chart(doc: dict[str, Any], path: Path, model: str) -> Path | None:
    """Success and mean reward on the held-out seeds before and after training, one pair of bars per capability, as a
    PNG at `path` (written atomically); None when matplotlib (the `plot` extra) is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [textwrap.fill(env_id.split("/", 1)[1].replace("_", " "), 22) for env_id in doc]
    fig, axes = plt.subplots(1, 2, figsize=(max(9.0, 3.2 * len(names) + 3), 4.8), squeeze=False)
    for ax, (key, label) in zip(axes[0], [("success_rate", "success"), ("mean_reward", "mean reward")]):
        xs = range(len(names))
        before = [doc[e]["before"].get(key) or 0.0 for e in doc]
        after = [doc[e]["after"].get(key) or 0.0 for e in doc]
        for offset, values, what, color in ((-0.2, before, "before training", "#bbbbbb"),
                                            (0.2, after, "after (warm start + GRPO)", "#2e7d32")):
            bars = ax.bar([x + offset for x in xs], values, width=0.4, label=what, color=color)
            ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7)  # a 0.00 bar is still read
        ax.set_xticks(list(xs), names, fontsize=7)
        ax.set_ylim(0, 1.15)
        ax.set_title(f"{label} on held-out seeds")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{model}: before and after training, per capability", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=110, format="png")
    plt.close(fig)
    return write_bytes_atomic(path, buffer.getvalue())
