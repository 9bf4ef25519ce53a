"""A deterministic scripted user that behaves like a person with a request.

It knows some facts (its user id, a reservation id, its reason, its payment method) and wants some things done
(`UserRequest`s). It reads each agent message with `language.turns.read_message` (the kind of turn: progress, a
question for one fact or several, a confirmation request, a completion claim, a refusal, a hand-off, a goodbye, an
instruction to act on its side; agreement with hand labels on 359 real agent turns is measured in
tests/test_user_reading.py) and answers in this order:

1. a goodbye, or a result or refusal that signs off ("... Have a great day!"): thanks, and the conversation ends;
1b. an instruction to do one of its `UserAction`s (something only it can do on its side): when one sentence names
   the action's verb and its object ("turn on notifications for the app", "enable the notifications"), not negated
   ("don't turn on ..."), it does it (the env runs the user-side tool) and reports it in words; each action at most
   once (a check of its phone every time it is asked, reading out what the phone shows), and a vague sentence ("try
   some settings") does nothing;
2. a confirmation question ("?", or "please confirm") that names a pending request's action and its target: yes (or
   no for a request it declines, which it then never asks for again), and in the same reply every fact the message
   also asks for ("Shall I cancel QZ7Y2K? Which card should the refund go to?");
3. a question for facts it holds, by any usual phrasing ("booking reference", "confirmation code", "account number",
   "why", "how would you like to pay", "your first and last name"): every fact asked for, in one reply, as often
   as asked;
4. a confirmation question that names no pending request: it asks what exactly the agent is going to do (never yes);
5. a refusal ("I can't", "not allowed", "cannot be modified"): the requests it names (all pending when it names
   none) are refused and never asked for again;
6. a progress message ("let me check", "one moment", "I'm on it", "pulling up the details") or a hand-off: it waits
   (a refusal in the same message still counts); after a refusal that announces nothing it ends the conversation
   when nothing is left, else asks for the next request;
7. any other statement: it ends the conversation once every request is resolved, else nudges for the first pending
   one and gives up after `MAX_NUDGES` nudges with no tool call in between;
8. any other question: it does not know; it repeats what it wants (or ends the conversation when nothing is pending).

It sees only its facts, its requests and the tool calls the env reports (`observe_call`), never the check's bindings
or the oracle. No reply but a yes to a named request contains a word the checks' default yes-pattern reads as
agreement, so waiting, nudging or not knowing never counts as a confirmation.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any, Literal

from trace_envs.language.confirmations import asks_confirmation, confirmation_wording
from trace_envs.language.instructions import action_sentences, action_words, names
from trace_envs.language.patterns import phrases_regex, words_regex
from trace_envs.language.plain import MAX_READ, normalize
from trace_envs.language.questions import asking_segments, fact_phrasings, without_offered_options
from trace_envs.language.turns import read_message
from trace_envs.language.values import text_mentions
from trace_envs.runtime.scenario import UserAction, UserRequest

STOP = "###STOP###"

GOODBYE_REPLY = "Thank you, goodbye."
YES_REPLY = "Yes, please go ahead."
NO_REPLY = "No, please don't do that. I've changed my mind."
VAGUE_REPLY = "Could you tell me exactly what you are going to do first?"
WAIT_REPLY = "Take your time, I'll wait."
REFUSED_REPLY = "I understand. Thank you."
DONE_REPLY = "Thank you, that's all I needed."
NOTHING_ELSE_REPLY = "No, that's all I needed. Thank you."
GIVE_UP_REPLY = "Never mind, I'll try again later."
MAX_NUDGES = 3

Status = Literal["pending", "done", "declined", "refused"]


@lru_cache(maxsize=1024)
def _fact_regex(label: str, aliases: tuple[str, ...]) -> Any:
    """The words that name the fact `label`, compiled once per label and aliases rather than on every reset."""
    return phrases_regex(fact_phrasings(label, aliases))


def _scalars(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 8:
        return
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _scalars(v, depth + 1)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield str(value)


class ScriptedUser:
    """The simulated user of an episode.

    facts: label -> value the user knows and gives when asked (default none).
    aliases: label -> other phrasings of that label, on top of the usual synonyms (default none).
    requests: what the user wants, in the order it asks for them (default none: every statement ends the talk).
    actions: what the user can do on its own side when an agent message names it (default none).
    """

    def __init__(
        self,
        facts: dict[str, str] | None = None,
        aliases: dict[str, list[str]] | None = None,
        requests: list[UserRequest] | None = None,
        actions: list[UserAction] | None = None,
    ):
        self.facts = dict(facts or {})
        self.aliases = {k: list(v) for k, v in (aliases or {}).items()}
        self.requests = list(requests or [])
        self._status: list[Status] = ["pending"] * len(self.requests)
        self._answered: list[bool] = [False] * len(self.requests)  # an info request's read has been observed
        self._fact_res = {label: _fact_regex(label, tuple(self.aliases.get(label, ()))) for label in self.facts}
        self._action_res = [words_regex(r.action_words) for r in self.requests]
        self._nudges = 0
        self.actions = list(actions or [])
        self._instruction_res = [action_words(tuple(a.verbs), tuple(a.objects)) for a in self.actions]
        self._acted: list[bool] = [False] * len(self.actions)
        self._performed: list[UserAction] = []

    # ---- what the env tells the user ----------------------------------------------------------------------------
    def observe_call(self, name: str, arguments: dict[str, Any], ok: bool, kind: str | None = None) -> None:
        """The agent called tool `name` with `arguments`; `ok` is False when the call returned an error; `kind` is the
        tool's kind ("read", "write", "other") when the env knows it. A successful call of a pending write or handoff
        request's tool with its target among the argument values fulfils it; a successful read prepares an info
        request to be resolved by the agent's next statement."""
        self._nudges = 0
        if not ok:
            return
        values: set[str] | None = None  # the arguments' scalars, walked only for a request this call is of
        for i, req in enumerate(self.requests):
            if self._status[i] != "pending":
                continue
            if req.kind == "info":
                of_request = name == req.tool or (req.tool is None and kind in (None, "read"))
            else:
                of_request = name == req.tool
            if not of_request:
                continue
            if req.target is not None:
                if values is None:
                    values = set(_scalars(arguments))
                if req.target not in values:
                    continue
            if req.kind == "info":
                self._answered[i] = True
            else:
                self._status[i] = "done"

    def take_performed(self) -> list[UserAction]:
        """The user-side actions the user did in its last reply (the env runs their tools), emptied on reading."""
        out, self._performed = self._performed, []
        return out

    @property
    def statuses(self) -> list[Status]:
        """Each request's status, in order: pending, done, declined or refused."""
        return list(self._status)

    # ---- the user's turn ----------------------------------------------------------------------------------------
    def reply(self, agent_text: str) -> tuple[str, bool]:
        """The user's answer to one agent message, and whether the user ended the conversation."""
        agent_text = agent_text[:MAX_READ]  # like a person, the user reads the start of a wall of text, not all of it
        text = normalize(agent_text)
        question = "?" in text
        reading = read_message(agent_text)
        closing = reading.signs_off and reading.label in ("completion_claim", "refusal_with_reason")
        if reading.label == "goodbye" or closing:
            if reading.refuses:
                self._refuse(agent_text, text)
            return self._end(GOODBYE_REPLY)
        instructed = self._instructed(agent_text)
        if instructed:
            self._nudges = 0
            for i in instructed:
                self._acted[i] = not self.actions[i].repeat
                self._performed.append(self.actions[i])
            return " ".join(self.actions[i].report for i in instructed), False
        asked = self._facts_asked(agent_text)
        facts = " ".join(f"My {label} is {self.facts[label]}." for label in asked)
        if reading.confirms or asks_confirmation(text):
            named = [i for i in self._named(agent_text, text, strict=True)
                     if self._status[i] in ("pending", "declined")]
            if named:
                return " ".join(p for p in (facts, self._confirm(named)) if p), False
            if not asked and self._pending() and reading.label == "confirmation_request":
                return VAGUE_REPLY, False
        if asked:
            return facts, False
        refused = reading.refuses
        if refused:
            self._refuse(agent_text, text)
        if reading.label in ("progress", "handoff") or refused and reading.waits:
            return WAIT_REPLY, False
        if refused:
            nxt = self._pending()
            if not nxt:
                return self._end(REFUSED_REPLY)
            return f"I understand. Could you please {self.requests[nxt[0]].phrase}?", False
        self._resolve_answered()
        pending = self._pending()
        if question:
            if not pending:
                return self._end(NOTHING_ELSE_REPLY)
            return f"I don't know. I just want to {self.requests[pending[0]].phrase}.", False
        if not pending:
            return self._end(DONE_REPLY)
        if self._nudges >= MAX_NUDGES:
            return self._end(GIVE_UP_REPLY)
        self._nudges += 1
        return f"Could you please {self.requests[pending[0]].phrase}?", False

    # ---- internals ----------------------------------------------------------------------------------------------
    def _end(self, text: str) -> tuple[str, bool]:
        return f"{text} {STOP}", True

    def _refuse(self, raw: str, text: str) -> None:
        """Marks the pending requests a refusal names (all pending ones when it names none) refused."""
        named = [i for i in self._named(raw, text, strict=False) if self._status[i] == "pending"]
        for i in named or self._pending():
            self._status[i] = "refused"

    def _pending(self) -> list[int]:
        return [i for i, s in enumerate(self._status) if s == "pending"]

    def _resolve_answered(self) -> None:
        acted = any(self._acted)
        for i, req in enumerate(self.requests):
            if self._status[i] == "pending" and ((req.kind == "info" and self._answered[i]) or (req.kind == "act" and acted)):
                self._status[i] = "done"

    def _instructed(self, raw: str) -> list[int]:
        """The user-side actions not yet done that some sentence of `raw` tells the user to do: it names one of the
        action's verbs and one of its objects, and no negation comes just before that verb."""
        out: list[int] = []
        if not self.actions:
            return out
        for text in action_sentences(raw):
            for i, action in enumerate(self._instruction_res):
                if not self._acted[i] and i not in out and names(text, action):
                    out.append(i)
        return out

    def _named(self, raw: str, text: str, strict: bool) -> list[int]:
        """Requests (write and handoff) the message names. strict (a confirmation): its action and its target when
        it has one; else (a refusal): its target, or its action when it has no target."""
        out = []
        for i, req in enumerate(self.requests):
            if req.kind in ("info", "act"):
                continue
            target = req.target or None
            has_action = self._action_res[i].search(text) is not None
            has_target = target is not None and text_mentions(target, raw)
            if strict and has_action and (target is None or has_target):
                out.append(i)
            elif not strict and (has_target if target is not None else has_action):
                out.append(i)
        return out

    def _facts_asked(self, raw: str) -> list[str]:
        """Labels of facts `raw` asks for: some part of it that asks something (a question, a request, the items of
        a list it asks for, see `language.questions.asking_segments`) names the fact by any phrasing, does not already
        state the fact's value, and is not a confirmation question about a request."""
        if not self.facts:
            return []
        asked: list[str] = []
        for segment in asking_segments(raw):
            text = normalize(segment)
            if confirmation_wording(text) and self._named(segment, text, strict=True):
                continue
            # a value among the options the agent offers ("(change of plan, airline cancelled flight, ...)") is
            # not one the agent states as known
            stated = without_offered_options(segment)
            for label, pattern in self._fact_res.items():
                value = str(self.facts[label])
                if label not in asked and pattern.search(text) and not text_mentions(value, stated):
                    asked.append(label)
        return [label for label in self.facts if label in asked]

    def _confirm(self, named: list[int]) -> str:
        yes = [i for i in named if not self.requests[i].decline]
        no = [i for i in named if self.requests[i].decline]
        for i in no:
            self._status[i] = "declined"
        if not no:
            return YES_REPLY
        if not yes:
            return NO_REPLY
        go = " and ".join(self.requests[i].phrase for i in yes)
        stop = " or ".join(self.requests[i].phrase for i in no)
        return f"Yes, please go ahead and {go}. But please don't {stop}: I've changed my mind about that."
