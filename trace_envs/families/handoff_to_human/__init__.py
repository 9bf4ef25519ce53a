"""Handoff to a human: transfer the user when the policy requires a human, and only then."""

from trace_envs.families.handoff_to_human.task import HandoffEnv, HandoffParams

__all__ = ["HandoffEnv", "HandoffParams"]
