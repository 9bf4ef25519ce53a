"""Confirmation before write: list the action's details and get an explicit yes before changing anything."""

from trace_envs.families.confirmation_before_write.task import ConfirmationEnv

__all__ = ["ConfirmationEnv"]
