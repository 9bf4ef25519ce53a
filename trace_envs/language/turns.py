"""How the scripted user reads one agent message: which kind of turn it is, from its words alone.

`read_message` sorts a message into the kinds of turn real agents send (the labels of
`tests/data/agent_turns.jsonl`, 359 assistant turns of tau-bench and tau2-bench runs labelled by hand):

- progress: the agent says it is working on it ("Let me check", "I'm on it", "Please hold on"): the user waits;
- question_one_fact / question_several_facts: it asks the user for one fact or for several (a user id and a
  reservation id; "your email, or your first name, last name and zip code"): the user gives every one it holds;
- confirmation_request: it asks for a yes to an action it names ("Would you like me to cancel ...?", "Please
  confirm with yes to proceed"): the user says yes only when the action is one it asked for;
- completion_claim: a statement of what was done or found ("Your reservation has been cancelled."): the user
  ends the conversation once nothing it wants is pending, else asks for the next thing;
- refusal_with_reason: it will not or cannot do what was asked ("basic economy cannot be modified"), also when
  it then offers a transfer or alternatives: the user stops asking for what was refused;
- handoff: it is transferring the user to a human now: the user waits for the transfer;
- goodbye: a sign-off that carries no result ("You're welcome! Have a great day!"): the conversation ends;
- user_instruction: it tells the user to do something on their own side (turn off airplane mode, check the
  status bar, restart the phone): the user does it when it can.

The order of the tests below is what the labelled turns taught: a handoff or a thanks-and-goodbye first; then an
instruction to the user; a refusal (unless what it asks to confirm is a concrete action of its own); a
confirmation; an explicit wait ("hold on", "one moment"); a question; an announced step; else a statement. Regexes
and word lists only: it runs at every env step. Each kind's phrasings live with its detector (`refusals`,
`confirmations`, `questions`, `progress`, `instructions`); the closing turns' live here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from trace_envs.language.confirmations import asks_for_yes
from trace_envs.language.instructions import instructs
from trace_envs.language.plain import MAX_READ
from trace_envs.language.progress import announces, asks_to_hold
from trace_envs.language.questions import asking_segments, facts_asked
from trace_envs.language.refusals import refuses
from trace_envs.language.sentences import plain_sentences

Label = Literal[
    "progress", "question_one_fact", "question_several_facts", "confirmation_request", "completion_claim",
    "refusal_with_reason", "handoff", "goodbye", "user_instruction",
]
LABELS: tuple[Label, ...] = (
    "progress", "question_one_fact", "question_several_facts", "confirmation_request", "completion_claim",
    "refusal_with_reason", "handoff", "goodbye", "user_instruction",
)

_HANDOFF = re.compile(
    r"\b(you are being transferred|you're being transferred|(i'll|i will|let me)( now| need to)? (transfer|connect) you"
    r"|i('m| am) (now )?transferring you|proceed with the transfer|while i (transfer|connect) you)\b"
)
# "take care of that for you" is a promise, not a farewell.
_SIGNOFF = re.compile(
    r"\b(good ?bye|bye|have an? (nice|great|good|wonderful|lovely|safe|pleasant) (day|one|evening|trip|flight|weekend"
    r"|journey|time)|safe travels|take care(?! of)|wishing you (all the best|a (great|good|nice|safe|speedy))|"
    r"all the best)\b"
)
_THANKS_REPLY = re.compile(
    r"^(you're|you are) (very |most )?welcome|^(that's|that is|what) (great|wonderful|fantastic|excellent|good) "
    r"(news|to hear)|^(i'm|i am) (so )?glad"
)
_DONE = re.compile(
    r"\b((has|have) (now )?(been|successfully)|successfully|(is|are) (now )?complete|completed|all set|"
    r"(was|were) (cancell?ed|updated|booked|issued|processed|submitted|changed|added|modified))\b"
)
# A refusal that goes on to offer something else (a transfer, alternatives) is still a refusal.
_ALTERNATIVES = re.compile(
    r"\b(transfer|human|(do|with) (that|this)|anything else|would you prefer|or would you|other options?)\b| or |:$"
)


@dataclass
class Reading:
    """What one agent message does. label: the kind of turn; facts: the fact keys it asks for (`questions._FACTS`
    keys, and `choice:N` for each "which one" question); confirms: it asks for a yes to an action; refuses: it says
    it cannot or will not; signs_off: it closes the conversation ("have a great day"); waits: it announces a step or
    asks the user to hold on."""

    label: Label
    facts: list[str] = field(default_factory=list)
    confirms: bool = False
    refuses: bool = False
    signs_off: bool = False
    waits: bool = False


def read_message(text: str) -> Reading:
    """The kind of turn `text` is (see the module docstring), with what it asks and whether it signs off."""
    # a turn longer than a reader takes in is read afresh: kept, 4,096 of them could hold 400 MB of a model's rambling
    reading = _read(text) if len(text) <= MAX_READ else _read.__wrapped__(text)
    # a copy, so no caller's change reaches the kept reading (built directly: `dataclasses.replace` walks the fields)
    return Reading(**{**reading.__dict__, "facts": list(reading.facts)})


@lru_cache(maxsize=4096)  # validation replays the same agent turns over every probe and mutant of a seed
def _read(text: str) -> Reading:
    sents = plain_sentences(text)
    if not sents:
        return Reading("completion_claim")
    whole = " ".join(sents)
    signs_off = bool(_SIGNOFF.search(whole))
    confirms, refused = asks_for_yes(sents), refuses(sents)
    segments = asking_segments(text)
    facts = facts_asked(text, segments)
    hold = asks_to_hold(whole)
    waits = hold or announces(sents)
    reading = Reading("completion_claim", facts, confirms, refused, signs_off, waits)
    if _HANDOFF.search(whole) or ("transfer" in whole and hold):
        reading.label = "handoff"
    elif signs_off and _THANKS_REPLY.search(sents[0]):
        reading.label = "goodbye"
    elif refused and not (confirms and not any(_ALTERNATIVES.search(s) for s in sents if "?" in s or "would you" in s)):
        reading.label = "refusal_with_reason"
    elif instructs(sents):
        reading.label = "user_instruction"
    elif confirms:
        reading.label = "confirmation_request"
    elif hold and (announces(sents) or not segments):
        reading.label = "progress"
    elif segments:
        reading.label = "question_several_facts" if len(facts) > 1 else "question_one_fact"
    elif announces(sents):
        reading.label = "progress"
    elif signs_off and not _DONE.search(whole):
        reading.label = "goodbye"
    return reading
