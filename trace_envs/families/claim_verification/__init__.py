"""Claim verification: the user asserts a record fact as the reason for a write; check the record before acting on it."""

from trace_envs.families.claim_verification.task import ClaimEnv, ClaimParams

__all__ = ["ClaimEnv", "ClaimParams"]
