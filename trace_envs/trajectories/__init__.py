"""Data sources: the trajectory model, loaders for real agent runs, and the DomainProfile."""

from importlib import import_module
from typing import Any

from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall

# The loaders (every log format) and the profile are imported when first used: the gym.make path needs only the models
# (through the checks), and importing the formats cost it about a third of its import time.
_LAZY = {"LoadResult": "loaders", "load_file": "loaders", "load_runs": "loaders", "summarize": "loaders",
         "DomainProfile": "profile", "ToolProfile": "profile", "build_profile": "profile",
         "load_overrides": "profile"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "DomainProfile",
    "GroundTruthAction",
    "LoadResult",
    "Run",
    "ToolCall",
    "ToolProfile",
    "TrajectoryFormatError",
    "build_profile",
    "load_file",
    "load_overrides",
    "load_runs",
    "summarize",
]
