"""How a drawn domain names its tools and fields: a naming style and, per verb, one of its synonyms.

Styles: `snake_verb_first` (`cancel_hold`), `snake_noun_first` (`hold_cancel`, `leave_request_submit`), `camel`
(`cancelHold`, `savingsOpen` is its noun-first cousin and is not drawn apart), `dotted` (`holds.cancel`). Fields follow
the style's case: camelCase fields for camel, snake_case otherwise.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from trace_envs.datasets.randomized.themes import plural

STYLES = ("snake_verb_first", "snake_noun_first", "camel", "dotted")
VERBS: dict[str, tuple[str, ...]] = {
    "get": ("get", "fetch", "lookup", "show", "retrieve", "read"),
    "search": ("search", "find", "list", "query"),
    "cancel": ("cancel", "void", "revoke", "withdraw"),
    "book": ("book", "reserve", "schedule"),
    "pay": ("pay", "settle"),
    "waive": ("waive", "forgive", "remove"),
    "change": ("change", "update", "modify", "set"),
    "escalate": ("escalate", "handoff", "refer", "route"),
    "enable": ("enable", "activate", "turn_on"),
    "verify": ("verify", "confirm", "validate"),
}
HANDOFF_OBJECTS = ("staff member", "case", "specialist", "supervisor", "human agent")


def words(text: str) -> list[str]:
    return [w for w in re.split(r"[^A-Za-z0-9]+", text.lower()) if w]


@dataclass
class Naming:
    """A domain's naming: its style and the synonym it drew for each verb key."""

    style: str
    verbs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def draw(cls, style: str, rng: random.Random) -> "Naming":
        return cls(style, {key: rng.choice(options) for key, options in VERBS.items()})

    def verb(self, key: str) -> str:
        return self.verbs.get(key, key)

    def tool(self, verb: str, obj: str) -> str:
        """The tool name for `verb` (a key of VERBS or a plain verb) on `obj` ("late fee")."""
        v, o = words(self.verb(verb)), words(obj)
        if self.style == "snake_verb_first":
            return "_".join(v + o)
        if self.style == "snake_noun_first":
            return "_".join(o + v)
        if self.style == "camel":
            parts = v + o
            return parts[0] + "".join(p.capitalize() for p in parts[1:])
        last = o[-1] if o[-1].endswith("s") else plural(o[-1])
        return "_".join(o[:-1] + [last]) + "." + "_".join(v)

    def field(self, name: str) -> str:
        """A field or argument name in the style's case."""
        parts = words(name)
        if self.style == "camel":
            return parts[0] + "".join(p.capitalize() for p in parts[1:])
        return "_".join(parts)
