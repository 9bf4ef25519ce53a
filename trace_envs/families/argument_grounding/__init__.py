"""Argument grounding: pass a write argument exactly as the lookup returned it, never an invented value."""

from trace_envs.families.argument_grounding.task import GroundingEnv, GroundingParams

__all__ = ["GroundingEnv", "GroundingParams"]
