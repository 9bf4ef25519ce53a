"""Data sources: the trajectory model, loaders for real agent runs, and the DomainProfile."""

from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.loaders import LoadResult, load_file, load_runs, summarize
from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall
from trace_envs.trajectories.profile import DomainProfile, ToolProfile, build_profile, load_overrides

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
