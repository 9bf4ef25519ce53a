"""The named axes a domain is drawn along, each a small table of values, and the draw for one seed.

Each axis's value for seed `s` comes from a shuffle of its values for the block of seeds `s` falls in (blocks as long
as the axis has values), so every value of every axis appears in any run of consecutive seeds as long as the axis,
while the combinations still vary. A source that cannot carry a drawn value overrides it, and the domain records
the value it has: ToolSandbox logs have exception lines for errors, no expected actions and Python names (no dotted
tools); tau2's error flag exists only in tau2 results and OpenAI-message logs that keep tool-message fields.
"""

from __future__ import annotations

import random
from typing import Any

from trace_envs.datasets.randomized.kinds import FAMILIES
from trace_envs.datasets.randomized.naming import STYLES
from trace_envs.datasets.randomized.shapes import ERROR_SHAPES, RECORD_SHAPES
from trace_envs.datasets.randomized.talk import REQUEST_TURNS
from trace_envs.datasets.randomized.themes import THEMES
from trace_envs.datasets.writers import FORMATS

AXES: dict[str, tuple[Any, ...]] = {
    "theme": tuple(t.name for t in THEMES),
    "naming": STYLES,
    "record_shape": RECORD_SHAPES,
    "error_shape": ERROR_SHAPES,
    "request_turn": REQUEST_TURNS,
    "option_count": (2, 3, 4, 5, 6),
    "source_format": FORMATS,
    "expected_actions": ("with", "without"),
}
FAMILY_COUNTS = (4, 5, 6)
RATES = (0.3, 0.4, 0.5, 0.6, 0.7)
NOISE_RATES = (0.04, 0.06, 0.08, 0.1)


def _balanced(axis: str, values: tuple[Any, ...], seed: int) -> Any:
    n = len(values)
    order = random.Random(f"axis:{axis}:{seed // n}").sample(range(n), n)
    return values[order[seed % n]]


def draw_axes(seed: int) -> dict[str, Any]:
    """The value of every axis for `seed`, after the source format's overrides."""
    axes = {name: _balanced(name, values, seed) for name, values in AXES.items()}
    if axes["source_format"] == "toolsandbox":
        axes.update(error_shape="exception", expected_actions="without")
        if axes["naming"] == "dotted":
            axes["naming"] = "snake_noun_first"
    if axes["error_shape"] == "flag" and axes["source_format"] == "tau-bench":
        axes["error_shape"] = "text"
    return axes


def draw_families(seed: int) -> dict[str, float]:
    """The families a domain plants a deficit of (4 to 6 of them), each with its rate."""
    rng = random.Random(f"families:{seed}")
    chosen = rng.sample(FAMILIES, rng.choice(FAMILY_COUNTS))
    return {family: rng.choice(RATES) for family in sorted(chosen)}
