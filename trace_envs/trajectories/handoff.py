"""Which tools hand the conversation to a person, in one domain: from what the definitions, the replies, the
conversations and the policy say, never from a name alone (a bank's `transfer_funds` moves money; it hands nothing
over).

A tool is a hand-off when, in this order:

1. its definition's description says a person takes over ("Transfer the user to a human agent ..."). A definition
   that describes the tool and says no such thing settles it the other way;
2. most of its replies say so ("You are being transferred to a representative");
3. the policy names it in a sentence where a person takes over ("To transfer, first make a tool call to
   transfer_to_human_agents, and then send the message 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT'");
4. its call ends the conversation (no tool call of the agent's after it, in most runs that make it) and what closes
   it says a person takes over: the agent's reply right after the call, or a policy sentence that hands the user over
   to a person in the words of the tool's name (tau-bench airline: "transfer the user to a human agent", the tool
   `transfer_to_human_agents`, the run ending on its reply).

`handoff_tools` collects them for the profile (`DomainProfile.handoffs`, tool -> why); `is_handoff` is what the rest
of the library asks.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from trace_envs.trajectories.kinds import definition_description, name_words
from trace_envs.trajectories.models import Run

MOST = 0.5
"""Share of a tool's replies that must say a person takes over."""
ENDS = 0.8
"""Share of the runs that call a tool successfully in which no agent tool call follows it."""
PERSON = re.compile(
    r"\b(?:humans?|persons?|people|representatives?|reps?|supervisors?|managers?|specialists?|staff|operators?|"
    r"colleagues?|teammates?|team members?|live agents?|real agents?|another agent|an agent|"
    r"(?:customer |technical )?(?:service|support|care) (?:team|department|desk))\b",
    re.I,
)
TAKEOVER = re.compile(
    r"\b(?:transfer\w*|hand(?:s|ed|ing)?[- ]?(?:off|over)|handoffs?|escalat\w*|connect\w*|rout(?:e|ed|es|ing)|"
    r"forward\w*|pass(?:ed|es|ing)?|take(?:s|n)? over|will (?:contact|call|reach out|get back|follow up|help|assist|"
    r"be with|review|handle|take)|reach out|be in touch)\b",
    re.I,
)
# Whoever takes the conversation itself over is a person, however the text names them ("A case will take over this
# conversation shortly." from a `route_case`; "Hand the conversation over to the desk, who takes over from here").
_TAKES_THE_CONVERSATION = re.compile(
    r"\btake(?:s|n)? over (?:this|the|your) (?:conversation|chat|call)\b|"
    r"\b(?:hand|pass|transfer)(?:s|ed|ing)? (?:this|the|your) (?:conversation|chat|call) (?:over|off|on)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def says_person_takes_over(text: str | None) -> bool:
    """Whether a sentence of `text` hands the conversation to a person: a person ("a human agent", "a
    representative", "our support team") and a hand-over ("transfer", "escalate", "will contact you") together, or
    anyone taking over the conversation itself."""
    # A match in a sentence is one in the whole text (sentences split at whitespace): most texts, tool results
    # that are records, are settled by the searches of the whole instead of three per sentence.
    return bool(text) and _hands_over(text) and any(_hands_over(s) for s in _SENTENCE.split(text))


def _hands_over(text: str) -> bool:
    return bool(PERSON.search(text) and TAKEOVER.search(text) or _TAKES_THE_CONVERSATION.search(text))


def _policy_sentences(policy: str) -> list[str]:
    return [s for s in _SENTENCE.split(policy or "") if says_person_takes_over(s)]


def _reply_after(run: Run, message_index: int) -> str | None:
    """The agent's first message in words after the message at `message_index`, before the user speaks again."""
    for m in run.messages[message_index + 1:]:
        if m.get("role") == "user":
            return None
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"].strip():
            return m["content"]
    return None


class _Seen:
    def __init__(self) -> None:
        self.replies = 0
        self.replies_say = 0
        self.runs = 0
        self.runs_end = 0
        self.closing_say = 0


def _observe(runs: Iterable[Run], described: set[str]) -> dict[str, _Seen]:
    """What the runs show of each tool; the replies of a tool in `described` (whose definition settles it) unread."""
    seen: dict[str, _Seen] = {}
    for run in runs:
        calls = run.agent_calls
        for name in {c.name for c in calls if not c.error}:
            s = seen.setdefault(name, _Seen())
            last = max(i for i, c in enumerate(calls) if c.name == name and not c.error)
            s.runs += 1
            if last == len(calls) - 1:
                s.runs_end += 1
                s.closing_say += says_person_takes_over(_reply_after(run, calls[last].message_index))
        for c in calls:
            if not c.error and c.result is not None and c.name not in described:
                s = seen[c.name]
                s.replies += 1
                s.replies_say += says_person_takes_over(c.result)
    return seen


def handoff_tools(runs: list[Run], definitions: Mapping[str, Mapping[str, Any]], policy: str) -> dict[str, str]:
    """Tool name -> why it hands the conversation to a person, for every tool the agent called, defined or was
    expected to call in `runs` that is one (see the module's rules)."""
    described = {name for name, d in definitions.items() if definition_description(d) is not None}
    seen = _observe(runs, described)
    names = set(seen) | set(definitions) | {g.name for r in runs for g in r.ground_truth or [] if g.requestor == "agent"}
    handing = _policy_sentences(policy)
    out: dict[str, str] = {}
    for name in sorted(names):
        desc = definition_description(definitions.get(name))
        if desc is not None:
            if says_person_takes_over(desc):
                out[name] = f'its description: "{_clip(desc)}"'
            continue
        s = seen.get(name)
        if s is not None and s.replies and s.replies_say >= MOST * s.replies:
            out[name] = f"{s.replies_say} of its {s.replies} replies say a person takes over"
            continue
        named = next((p for p in handing if re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", p)), None)
        if named is not None:
            out[name] = f'the policy: "{_clip(named)}"'
            continue
        if s is None or not s.runs or s.runs_end < ENDS * s.runs:
            continue
        if s.closing_say >= MOST * s.runs_end:
            out[name] = (f"its call ends {s.runs_end} of {s.runs} conversations, the agent saying a person takes "
                         "over")
            continue
        words = " ".join(name_words(name))
        if handing and PERSON.search(words) and TAKEOVER.search(words):
            out[name] = (f"its call ends {s.runs_end} of {s.runs} conversations, and the policy hands the user over "
                         f'in its words: "{_clip(handing[0])}"')
    return out


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_handoff(tool: str, domain: Any) -> bool:
    """Whether `tool` hands the conversation to a person in this domain. `domain`: a `DomainProfile`, or its `kinds`
    (a `ToolKinds`, which carries the profile's hand-offs); a plain mapping of kinds knows of no hand-off."""
    handoffs = getattr(domain, "handoffs", None)
    return handoffs is not None and tool in handoffs
