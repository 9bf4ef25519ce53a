"""What the scripted users and agents of a drawn domain say: real sentences from `phrasings.json` (extracted from
the tau-bench and tau2-bench runs in ../shared/data by scripts/extract_phrasings.py), with the domain's own nouns and
ids put in, and the few sentences a task needs that no real run says generically (a conditional, a claim), built
around them.

The request reaches the agent in the user turn the domain drew (`request_turn`, 1 to 3): with the identification in
the first turn, after a greeting and an identification, or after a greeting, a question for the id and the id.
"""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable

from trace_envs.datasets.randomized.themes import Theme

PHRASINGS = Path(__file__).with_name("phrasings.json")
REQUEST_TURNS = (1, 2, 3)
_FOUND = ("Thank you. How can I help you today?", "Thanks, I've found your profile. What can I do for you?",
          "Thanks! How can I help you today?")
_STANDALONE_HELP = re.compile(r"\b(that|this|it|both|too|check|find|identify|selecting)\b", re.IGNORECASE)


@lru_cache(maxsize=1)
def phrasings() -> dict[str, tuple[str, ...]]:
    """Category -> real sentences (see phrasings.json for where each was said)."""
    data = json.loads(PHRASINGS.read_text(encoding="utf-8"))
    return {cat: tuple(item["text"] for item in items) for cat, items in data["categories"].items()}


def _choice(rng: random.Random, category: str, keep: Callable[[str], bool] = lambda s: True) -> str:
    options = [s for s in phrasings()[category] if keep(s)]
    return rng.choice(options)


class Talk:
    """The sentences of one domain's users and agents."""

    def __init__(self, theme: Theme, request_turn: int) -> None:
        self.theme = theme
        self.request_turn = request_turn

    def _fill(self, text: str, **values: str) -> str:
        values.setdefault("record", self.theme.record)
        values.setdefault("id_label", self.theme.id_label)
        return text.format(**values)

    # ---- the user ---------------------------------------------------------------------------------------------------
    def greeting(self, rng: random.Random) -> str:
        return _choice(rng, "user_greeting")

    def identify(self, rng: random.Random, pid: str) -> str:
        return self._fill(_choice(rng, "user_identify", lambda s: "{record}" not in s), id=pid)

    def request(self, rng: random.Random, phrase: str, greeting: bool = False) -> str:
        """`phrase` ("renew my loan LN-12345") after a real lead ("I'd like to", "Can you"), as a sentence."""
        lead = _choice(rng, "user_request_lead", lambda s: greeting or not re.match(r"(Hi|Hello|Hey)\b", s))
        if lead.lower().startswith(("can you", "could you")):
            return f"{lead} {phrase}?"
        return f"{lead} {phrase}."

    def yes(self, rng: random.Random) -> str:
        return _choice(rng, "user_yes")

    def decline(self, rng: random.Random) -> str:
        return _choice(rng, "user_decline")

    def thanks(self, rng: random.Random) -> str:
        return _choice(rng, "user_thanks")

    def no_more(self, rng: random.Random) -> str:
        return _choice(rng, "user_no_more")

    def ack(self, rng: random.Random) -> str:
        return _choice(rng, "user_ack")

    # ---- the agent --------------------------------------------------------------------------------------------------
    def agent_greeting(self, rng: random.Random) -> str:
        return "Hi! How can I help you today?" if rng.random() < 0.6 else _choice(rng, "agent_greeting")

    def ask_id(self, rng: random.Random) -> str:
        return self._fill(_choice(rng, "agent_ask_id", lambda s: "{record}" not in s))

    def agent_ack(self, rng: random.Random) -> str:
        return _choice(rng, "agent_ack")

    def anything_else(self, rng: random.Random) -> str:
        return _choice(rng, "agent_anything_else")

    def confirm_question(self, rng: random.Random, details: str) -> str:
        """The details of a write, then a real question asking to go ahead."""
        return f"{details} {_choice(rng, 'agent_confirm_ask')}"

    def apology(self, rng: random.Random, reason: str) -> str:
        lead = _choice(rng, "agent_apology_lead")
        keep = reason.startswith(("I ", "I'")) or reason[:2].isupper()
        return f"{lead} {reason if keep else reason[:1].lower() + reason[1:]}"

    # ---- a conversation's opening and end ---------------------------------------------------------------------------
    def open(self, b, rng: random.Random, pid: str, request: str, authenticate: Callable[[], None]) -> None:
        """The user's turns up to the one carrying `request` (a full sentence or two), and the agent's in between;
        `authenticate` writes the agent's lookup of the customer once it has their id."""
        if self.request_turn == 1:
            parts = [request, self.identify(rng, pid)]
            if rng.random() < 0.5:
                parts.insert(0, self.greeting(rng))
            b.user(" ".join(parts))
            authenticate()
            return
        if self.request_turn == 2:
            if rng.random() < 0.5:
                b.user(f"{self.greeting(rng)} {self.identify(rng, pid)}")
                authenticate()
                b.say(rng.choice(_FOUND))
                b.user(request)
            else:
                help_ask = _choice(rng, "user_help_ask", lambda s: not _STANDALONE_HELP.search(s))
                b.user(f"{self.greeting(rng)} {help_ask}")
                b.say(f"{self.agent_ack(rng)} {self.ask_id(rng)}")
                b.user(f"{self.identify(rng, pid)} {request}")
                authenticate()
            return
        b.user(self.greeting(rng))
        b.say(f"{self.agent_greeting(rng)} {self.ask_id(rng)}" if rng.random() < 0.5 else self.ask_id(rng))
        b.user(self.identify(rng, pid))
        authenticate()
        b.say(rng.choice(_FOUND))
        b.user(request)

    def close(self, b, rng: random.Random, done: str) -> None:
        """The agent says what it did (or found), the user thanks it and leaves."""
        b.say(f"{done} {self.anything_else(rng)}")
        b.user(f"{self.no_more(rng)} {self.thanks(rng)}" if rng.random() < 0.6 else self.thanks(rng))
