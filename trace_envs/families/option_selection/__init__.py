"""Option selection under the user's constraints: search, pick the one option that meets everything the user said,"""

from trace_envs.families.option_selection.task import OptionEnv, OptionParams

__all__ = ["OptionEnv", "OptionParams"]
