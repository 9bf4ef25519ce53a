"""The gated write: `precondition_before_write` and `policy_refusal`, two presets of one task (see `task.py`)."""

from trace_envs.families.gated_write.task import GatedWriteEnv, PreconditionParams, RefusalParams

__all__ = ["GatedWriteEnv", "PreconditionParams", "RefusalParams"]
