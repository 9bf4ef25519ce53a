"""What counts as a progress turn: the agent announces a step it is taking or asks the user to hold on.

A person waits after "Let me check", "I'll look into that", "I'm on it", "Pulling up the details" or "Please hold
on": the scripted user waits instead of ending the talk, and an oracle that announces each step (the generator's
`chatty`, with `generate.progress_phrases`) must still score 1.0. "Let me know" asks, it announces nothing; a step
announced under a condition ("once you confirm, I'll cancel") waits for the condition, not for the agent. Fitted on
the 78 progress turns of tests/data/agent_turns.jsonl.
"""

from __future__ import annotations

import re
from functools import lru_cache

from trace_envs.language.sentences import opens_with_condition

_HOLD = re.compile(
    r"\b(hold on|hang on|one moment|a moment|one second|just a (sec|second|minute)|bear with me|please wait|"
    r"give me a (moment|second|minute|sec))\b"
)
_PROGRESS = re.compile(
    r"\b(let me(?! know)|let's (first |now )?(proceed|start|continue|explore|search|find|check|look|begin|go|try|get)|"
    r"(i'll|i will) (now |first |then |just |go ahead and |start by )?(search|retriev|check|look|proceed|mak|updat|"
    r"cancel|finaliz|start|begin|get|pull|review|verif|gather|find|calculat|process|book|modif|chang|see|do |tr|"
    r"ensur|compar|double|take care|handl|work|need to (verify|check))\w*|i need to (check|verify)|"
    r"(i'm|i am) on it|on it\b|pulling (up|that)|looking (into|up)|working on (it|that|this|your)|right away|"
    r"^checking\b|\bchecking (on|that|this|your|the)\b|allow me|^one sec|"
    r"(i'm|i am) (now )?(checking|looking|retrieving|pulling|searching|reviewing|processing|going to))"
)


def asks_to_hold(plain_text: str) -> bool:
    """Whether `plain` text asks the user to hold on ("one moment", "please wait", "bear with me")."""
    return _HOLD.search(plain_text) is not None


def announces(plain_cut: list[str]) -> bool:
    """Whether one of the `plain_sentences` announces a step the agent is taking (not under a condition)."""
    return any(_announces(s) for s in plain_cut)


@lru_cache(maxsize=8192)  # the user, the checks and the labellers read the same sentences, replayed over the seeds
def _announces(sentence: str) -> bool:
    return bool(_PROGRESS.search(sentence)) and not opens_with_condition(sentence)
