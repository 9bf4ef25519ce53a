"""The base Gymnasium env generated modules build on, its action parser, scripted user and scenario type."""

from trace_envs.runtime.base import CHARSET, TraceEnv, check_arguments, sanitize, tool_schema
from trace_envs.runtime.parse import ParsedAction, ParsedCall, parse_action
from trace_envs.runtime.scenario import Scenario, ToolError, UserAction, UserRequest
from trace_envs.runtime.user import STOP, ScriptedUser

__all__ = [
    "CHARSET",
    "STOP",
    "ParsedAction",
    "ParsedCall",
    "Scenario",
    "ScriptedUser",
    "ToolError",
    "TraceEnv",
    "UserAction",
    "UserRequest",
    "check_arguments",
    "parse_action",
    "sanitize",
    "tool_schema",
]
