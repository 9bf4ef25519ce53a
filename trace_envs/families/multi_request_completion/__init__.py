"""Multi-request completion: finish every request the user made, not just the first."""

from trace_envs.families.multi_request_completion.task import MultiRequestEnv, MultiRequestParams

__all__ = ["MultiRequestEnv", "MultiRequestParams"]
