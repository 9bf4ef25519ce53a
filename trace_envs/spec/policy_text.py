"""The part of a domain policy an env shows: the sections that govern its tools, plus the current time when the text
has time rules. A whole policy (6,500 characters for tau-bench airline) in every prompt costs tokens on every rollout
and buries the rule the env checks; the excerpt keeps the rule and the procedure around it (confirmation before
writes, transfers to a human) verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trace_envs.language.confirmations import policy_requires_confirmation
from trace_envs.language.words import policy_nouns, policy_stems

_TIME_RULE = re.compile(r"\b(\d+\s*(hours?|days?|minutes?|weeks?)|within|current time|today|dates?|flown)\b", re.I)
_STATES_NOW = re.compile(r"current (time|date)", re.I)
MAX_FALLBACK = 1_200


def _blocks(policy: str) -> list[tuple[str, str]]:
    """(section heading, block text) for every bullet or paragraph, in order."""
    out: list[tuple[str, str]] = []
    heading = ""
    current: list[str] = []

    def flush() -> None:
        if current and any(line.strip() for line in current):
            out.append((heading, "\n".join(current).strip()))
        current.clear()

    for line in policy.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            flush()
            heading = stripped
        elif not stripped:
            flush()
        elif re.match(r"^(\s*)([-*]|\d+\.)\s", line) and not line.startswith(("  ", "\t")):
            flush()
            current.append(line.rstrip())
        else:
            current.append(line.rstrip())
    flush()
    return out


def _mentions(text: str, tool: str) -> bool:
    """Whether a policy block names `tool`'s action: one of its verb's stems and, when its name has any, one of its
    nouns (`language.words.policy_stems`, `policy_nouns`)."""
    lowered = text.lower()
    verbs, nouns = policy_stems(tool), policy_nouns(tool)
    verb_hit = any(re.search(rf"\b{re.escape(v)}", lowered) for v in verbs)
    return verb_hit and (not nouns or any(re.search(rf"\b{re.escape(n)}", lowered) for n in nouns))


def excerpt(policy: str, writes: Iterable[str], handoffs: Iterable[str] = (), terms: Iterable[str] = ()) -> str:
    """The policy's sections that govern `writes` (and `handoffs`), the bullets about confirmation before writes and
    transfers, and any block naming one of `terms` (a gate field's words or values); verbatim, in the policy's order,
    under their headings. The policy's opening lines when nothing matches."""
    writes, handoffs, terms = list(writes), list(handoffs), [t.lower() for t in terms if t]
    blocks = _blocks(policy)
    headed = {h for h, _ in blocks if h and any(_mentions(h, w) for w in writes)}
    keep = []
    for heading, text in blocks:
        lowered = text.lower()
        hit = (
            heading in headed
            or any(_mentions(text, w) for w in writes)
            or (writes and policy_requires_confirmation(text))
            or (handoffs and "transfer" in lowered and "human" in lowered)
            or any(re.search(rf"\b{re.escape(t)}\b", lowered) for t in terms)
            or bool(_STATES_NOW.search(text))
        )
        if hit:
            keep.append((heading, text))
    if not [k for k in keep if not _STATES_NOW.search(k[1])]:
        return policy[:MAX_FALLBACK].rstrip()
    out: list[str] = []
    last = None
    for heading, text in keep:
        if heading and heading != last:
            out.append(heading)
            last = heading
        out.append(text)
    return "\n\n".join(out)


def has_time_rules(text: str) -> bool:
    return bool(_TIME_RULE.search(text))


def with_current_time(text: str, now: str | None) -> str:
    """`text` with a first line stating the current time, when it has time rules and does not state it already."""
    if not now or not has_time_rules(text) or _STATES_NOW.search(text):
        return text
    return f"The current time is {now.replace('T', ' ')}.\n\n{text}"
