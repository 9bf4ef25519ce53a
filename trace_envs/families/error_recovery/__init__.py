"""Error recovery: a write fails with an error naming a cause that another tool removes; remove it and retry, or,"""

from trace_envs.families.error_recovery.task import RecoveryEnv, RecoveryParams

__all__ = ["RecoveryEnv", "RecoveryParams"]
