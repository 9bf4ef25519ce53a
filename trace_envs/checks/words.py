"""Words that name a tool's action: its leading verb, the verb's synonyms and the thing it acts on.

Shared by the checks (a confirmation question must name the action) and the labelers (a user asking for the action).
"""

from __future__ import annotations

import re
from functools import lru_cache

# A tool's leading verb -> words a person uses for that action. Entries may be word prefixes ("compensat").
VERB_SYNONYMS = {
    "update": ("update", "change", "modify"),
    "modify": ("modify", "change", "update"),
    "book": ("book", "reserve", "reservation"),
    "cancel": ("cancel",),
    "refund": ("refund",),
    "exchange": ("exchange", "swap"),
    "return": ("return",),
    "send": ("send", "compensat", "certificate"),
    "refuel": ("refuel", "top up"),
    "enable": ("enable", "activate", "turn on"),
    "resume": ("resume", "reactivate", "restore"),
    "suspend": ("suspend", "deactivate"),
    "pay": ("pay", "charge"),
    "charge": ("charge", "pay"),
}

# Further words an agent naming the action to the user would use ("add a bag" is an update of the baggage), kept
# apart from VERB_SYNONYMS because the labelers look for those inside user text, where "add" would hit "address".
ASK_EXTRA = {"update": ("add",), "modify": ("add",), "refuel": ("add",)}
# Words for changing the thing acted on ("upgrade" a reservation's flights to business, "swap" an order's items).
THING_EXTRA = {"flights": ("upgrade", "downgrade", "switch"), "items": ("swap", "switch", "replace"),
               "payment": ("pay", "charge")}

# Verbs too plain to name an action by themselves ("make_payment"): the thing they act on names it, even in a
# two-word name.
LIGHT_VERBS = frozenset({"make", "do", "process", "issue", "apply", "submit", "create", "perform", "place", "file"})
# Last words of a tool name that only name the record (`cancel_pending_order`): nearly every message mentions the
# record, so they would not show which action is meant.
RECORD_NOUNS = frozenset(
    "reservation reservations booking bookings order orders user users account accounts customer customers profile "
    "record records".split()
)


def tool_words(tool: str) -> list[str]:
    """The lower-case words of a tool name: `update_reservation_baggages` and `updateReservationBaggages` alike."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).lower()
    return [w for w in re.split(r"[^a-z0-9]+", spaced) if w]


def tool_verb(tool: str) -> str:
    """A tool's leading word, taken as its verb ("" when the name starts with a separator)."""
    return re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).lower())[0]


def verb_synonyms(tool: str) -> tuple[str, ...]:
    """Words a user asking for `tool`'s action would likely use (its leading verb and a few synonyms)."""
    head = tool_verb(tool)
    return VERB_SYNONYMS.get(head, (head,))


def action_words(tool: str) -> list[str]:
    """Words that name `tool`'s action in a question to the user: the verb, its synonyms, and, for a tool named
    verb_record_thing (three words or more), the thing acted on in singular and plural ("baggage", "baggages").

    The record noun (`cancel_reservation`, `cancel_pending_order`) is left out (see RECORD_NOUNS), and so is the noun
    of any other two-word name but one whose verb is too plain to name the action (`make_payment` -> payment, pay,
    charge; the verb "make" itself names nothing)."""
    words = tool_words(tool)
    if not words:
        return []
    head, thing = words[0], words[-1]
    has_thing = thing not in RECORD_NOUNS and (len(words) >= 3 or (len(words) == 2 and head in LIGHT_VERBS))
    out = [] if head in LIGHT_VERBS and has_thing else list(VERB_SYNONYMS.get(head, (head,)))
    out += ASK_EXTRA.get(head, ())
    if has_thing:
        out += [thing, thing[:-1]] if thing.endswith("s") and len(thing) > 3 else [thing, thing + "s"]
        out += THING_EXTRA.get(thing, ())
    return list(dict.fromkeys(out))


def word_pattern(words: list[str]) -> str:
    """A regex (for `re`, built from escaped literals) matching any of `words` at the start of a word, so "cancel"
    also finds "cancelling" and "cancellation"; a trailing "e" or "y" is optional so "update" finds "updating" and
    "modify" finds "modified"."""
    stems = {(w[:-1] if w[-1:] in ("e", "y") and len(w) > 4 else w).lower() for w in words if w}
    stems = sorted(stems, key=len, reverse=True)
    return r"(?<![^\W_])(?:" + "|".join(re.escape(s) for s in stems) + ")" if stems else r"(?!)"


@lru_cache(maxsize=256)
def words_regex(words: tuple[str, ...]) -> re.Pattern[str]:
    """`word_pattern(words)` compiled, case-insensitive."""
    return re.compile(word_pattern(list(words)), re.IGNORECASE)
