"""A capability family written outside the library, both halves side by side as the built-in ones are: `task.py`
(the env: what `gym.make` imports) and `detector.py` (how `trace-envs mine` finds the failure in real runs).
Importing this package registers the task only; import `refund_destination.detector` before mining."""

from refund_destination.task import RefundDestinationEnv, RefundParams

__all__ = ["RefundDestinationEnv", "RefundParams"]
