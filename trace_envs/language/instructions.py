"""What counts as the agent telling the user to do something on the user's side (telecom-style troubleshooting).

Two readings, one for each question asked of a message:

- `instructs`: is this turn an instruction at all? One sentence tells the user to act ("turn off airplane mode",
  "please check the status bar", "could you restart the phone") on something of the device (phone, settings, SIM,
  app, Wi-Fi, mobile data, ...);
- `names_action`: does it tell the user to do this action? One sentence names one of the action's verbs and one of
  its objects, as asked for: in its base or -ing form ("please turn off", "try turning off"), not right after a
  negation ("don't turn on ..."), nor as a state ("check if Airplane Mode is enabled"), unless the sentence asks to
  make it so ("make sure mobile data is enabled"). What the scripted user acts on, and what a labeler looks for in a
  real agent's messages.
"""

from __future__ import annotations

import re
from functools import lru_cache

from trace_envs.language.patterns import phrases_regex, verb_phrases_regex
from trace_envs.language.plain import MAX_READ, normalize
from trace_envs.language.sentences import SENTENCE_END

# An agent asking the user to do something, the verb it asks for captured ("could you please open ...", "you'll need to
# go ahead and allow ..."): how real agents word the request in the runs a user-side fix is learned from.
ASKED_VERB = re.compile(r"\b(?:please|kindly|need you to|you'll need to|you need to|could you|can you)\s+"
                        r"(?:please\s+)?(?:go ahead and\s+)?([a-z]+)\b")

_DEVICE = re.compile(
    r"\b(phone|device|settings|status bar|apn|sim|app|screen|vpn|data saver|wi-?fi|airplane|mobile data|network|"
    r"signal|permissions?|internet|mms|picture message|payment requests?|pin|speed test)\b"
)
_DO_VERB = (
    r"(turn|toggle|switch|restart|reboot|reseat|power|remove|insert|reinsert|enable|disable|grant|enter|open|go to|"
    r"tap|select|set|make sure|try|check|look|follow|accept|pay|unlock|reset|swipe|browse|run|perform)"
)
_INSTRUCT = re.compile(
    rf"(^|, |; |: )(now,? |next,? |first,? |then,? |great[,!]? |yes,? |so,? |also,? )?(please |kindly )?"
    rf"(go ahead and |try to |also )?{_DO_VERB}\b|\b(please|kindly|go ahead and|you can go ahead and|you'll need to|"
    rf"you need to|need you to) {_DO_VERB}\b|\b(could|can) you (please )?{_DO_VERB}\b"
)

# "don't turn off ...", "no need to restart ...": the sentence names the action without asking for it.
_NEGATION = re.compile(r"\b(don't|do not|dont|no need to|never|not|without|stop)\b")
# "is enabled", "is now turned off": the verb describes a state ("check if Airplane Mode is enabled"), asks for
# nothing, unless the sentence asks to make it so ("make sure mobile data is enabled").
_STATE = frozenset({"is", "are", "was", "were", "be", "been", "being", "it's", "that's", "stays", "remains"})
_ENSURE = re.compile(r"\b(make sure|ensure|be sure)\b")


def instructs(sentences: list[str]) -> bool:
    """Whether one of the (`plain`) sentences tells the user to act on something of its device."""
    return any(_instructs(s) for s in sentences)


@lru_cache(maxsize=8192)  # each agent sentence is read by the user and by the checks, replayed over the seeds
def _instructs(sentence: str) -> bool:
    return bool(_INSTRUCT.search(sentence) and _DEVICE.search(sentence))


class ActionWords:
    """A user-side action's verbs and objects, compiled for `names`. Hashed by identity, as a cache key: a compiled
    pattern hashes its whole program on every lookup, which cost more than the cached reading it looked up."""

    __slots__ = ("verb_re", "object_re")

    def __init__(self, verb_re: re.Pattern[str], object_re: re.Pattern[str]):
        self.verb_re, self.object_re = verb_re, object_re


@lru_cache(maxsize=1024)  # one per action of a spec: every reset's user asks for the same ones
def action_words(verbs: tuple[str, ...], objects: tuple[str, ...]) -> ActionWords:
    """The compiled `ActionWords` of a user-side action with these verbs and objects."""
    return ActionWords(verb_phrases_regex(tuple(verbs)), phrases_regex(list(objects)))


def names(text: str, action: ActionWords) -> bool:
    """Whether `normalize`d `text` names the object and the verb as asked for: in its base or -ing form ("please
    turn off", "try turning off"), not just after a negation, nor as a state."""
    return _names(text, action) if len(text) <= MAX_READ else _names.__wrapped__(text, action)


@lru_cache(maxsize=8192)  # the scripted user reads the same agent sentences on every seed an agent replays them
def _names(text: str, action: ActionWords) -> bool:
    if not action.object_re.search(text):
        return False

    def asks(m: re.Match[str]) -> bool:
        head = m.group(0).split()[0]
        if head.endswith("ed") or (head.endswith("s") and not head.endswith("ss")):
            return False  # "Airplane Mode disables ...", "once you've turned it off": it tells, not asks
        before = text[: m.start()].split()
        # a negation among the two words before the verb ("please don't turn on ...") takes it back
        state = bool(_STATE & set(before[-2:])) and not _ENSURE.search(text[: m.start()])
        return not _NEGATION.search(" ".join(before[-2:])) and not state

    return any(asks(m) for m in action.verb_re.finditer(text))


def names_action(text: str, verbs: tuple[str, ...] | list[str], objects: tuple[str, ...] | list[str]) -> bool:
    """Whether some sentence of `text` tells someone to do the action named by one of `verbs` and one of `objects`
    (what the scripted user acts on, and what a labeler looks for in a real agent's messages)."""
    if not verbs or not objects:
        return False
    action = action_words(tuple(verbs), tuple(objects))
    return any(names(s, action) for s in action_sentences(text))


def action_sentences(text: str) -> list[str]:
    """The pieces of `text` (its first `MAX_READ` characters) that `names` reads: each sentence, `normalize`d."""
    return list(_action_sentences(text[:MAX_READ]))


@lru_cache(maxsize=4096)  # an agent's turn is read on every seed it is replayed on
def _action_sentences(text: str) -> tuple[str, ...]:
    return tuple(normalize(s) for s in SENTENCE_END.split(text))
