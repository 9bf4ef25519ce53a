"""Conditional request: the user's request depends on a fact of their record; read it, then do the branch it selects."""

from trace_envs.families.conditional_request.task import ConditionalEnv, ConditionalParams

__all__ = ["ConditionalEnv", "ConditionalParams"]
