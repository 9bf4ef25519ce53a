"""A deterministic scripted user: answers requests for information and for confirmation, brings up follow-up
requests, and ends the conversation when the agent stops asking."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trace_envs.checks.clauses import DEFAULT_ASK

STOP = "###STOP###"
_ASK = re.compile(DEFAULT_ASK)


@dataclass
class ScriptedUser:
    """`facts` maps a label the agent may ask about (e.g. "reservation id") to its value; `aliases` gives other words
    that mean the same label. `confirm` is how the user answers a request for confirmation. `followups` are said, one
    per agent message, once the agent stops asking questions."""

    facts: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    confirm: bool = True
    followups: list[str] = field(default_factory=list)
    max_idle_questions: int = 2
    given: set[str] = field(default_factory=set)
    idle: int = 0

    def reply(self, agent_text: str) -> tuple[str, bool]:
        """The user's answer to one agent message, and whether the user ended the conversation."""
        lowered = agent_text.lower()
        asked = [label for label in self.facts if label not in self.given and self._mentions(lowered, label)]
        if asked:
            self.given.update(asked)
            return " ".join(f"My {label} is {self.facts[label]}." for label in asked), False
        if _ASK.search(agent_text):
            return ("Yes, please go ahead." if self.confirm else "No, please don't do that."), False
        if self.followups:
            return self.followups.pop(0), False
        if "?" in agent_text and self.idle < self.max_idle_questions:
            self.idle += 1
            return "I don't have anything else to add. Could you please take care of my request?", False
        return f"Thank you, that's all I needed. {STOP}", True

    def _mentions(self, lowered: str, label: str) -> bool:
        words = [label, *self.aliases.get(label, [])]
        return any(w.lower() in lowered for w in words)
