"""User-side action: get the user to do what only the user can do, then check that it worked."""

from trace_envs.families.user_action.task import UserActionEnv, UserActionParams

__all__ = ["UserActionEnv", "UserActionParams"]
