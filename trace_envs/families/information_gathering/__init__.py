"""Information gathering: ask the user for the key instead of guessing it, then answer from the record."""

from trace_envs.families.information_gathering.task import GatheringEnv, GatheringParams

__all__ = ["GatheringEnv", "GatheringParams"]
