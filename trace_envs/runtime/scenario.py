"""What a family's generator builds at reset: world state, check bindings, the user's script and the oracle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ToolError(Exception):
    """Raised by a tool implementation for a bad request; the agent sees `{"error": message}`."""


@dataclass
class Scenario:
    state: dict[str, Any]
    bindings: dict[str, Any]
    opening: str
    facts: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    confirm: bool = True
    followups: list[str] = field(default_factory=list)
    oracle: list[str] = field(default_factory=list)
    mutants: dict[str, list[str]] = field(default_factory=dict)
