"""Composable, weighted predicates over an action trace: one implementation scores env episodes and labels real runs."""

from trace_envs.checks.clauses import (
    AllCompleted,
    Asked,
    CallMade,
    CallRef,
    Check,
    CheckResult,
    Clause,
    Communicated,
    Confirmation,
    FinalState,
    Grounded,
    Label,
    NoCall,
    Order,
)
from trace_envs.checks.matching import BindingError, matches
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.language.values import text_mentions

__all__ = [
    "ActionTrace",
    "AllCompleted",
    "Asked",
    "BindingError",
    "CallMade",
    "CallRef",
    "Check",
    "CheckResult",
    "Clause",
    "Communicated",
    "Confirmation",
    "FinalState",
    "Grounded",
    "Label",
    "NoCall",
    "Order",
    "TraceStep",
    "matches",
    "text_mentions",
]
