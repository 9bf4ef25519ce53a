"""Answer from records ("tool then tell"): read the record the user asks about, then tell them the value."""

from trace_envs.families.answer_from_records.task import AnswerEnv, AnswerParams

__all__ = ["AnswerEnv", "AnswerParams"]
