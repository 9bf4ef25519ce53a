"""Bounds on untrusted structure: tool-call arguments from an agent, a trajectory file or a spec."""

from __future__ import annotations

from typing import Any

MAX_ARGUMENT_DEPTH = 32  # real tool arguments nest a few levels; far deeper ones would overflow the stack downstream


def nesting_exceeds(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether lists / objects nest deeper than `limit` (iterative: the value may be nested past the recursion limit)."""
    if isinstance(value, dict) and limit >= 1:
        for v in value.values():
            if isinstance(v, (dict, list)):
                break
        else:
            return False  # flat arguments, most tool calls': nothing to walk
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False
