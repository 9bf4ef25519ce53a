"""The words of tool names, and the words people use for a tool's action: one vocabulary for every reader.

`VERB_SYNONYMS` maps a tool's leading verb to the words for its action, in three reaches (`Synonyms`), because the
readers ask different questions and a word that serves one misleads another:

- `words`: every reader takes them: the labelers look for them in the user's messages ("did the user ask to
  cancel?"), a confirmation question must name the action with one of them, and the scripted user hears its request
  named by them (`verb_synonyms`);
- `in_questions`: they also name the action in a question to the user ("Shall I add a bag?" updates the baggage),
  but the labelers leave them out of user text, where "add" would hit "address" (`action_words`);
- `to_the_user`: only the scripted user hears them as naming its request ("edit", "remove" for an update; "issue"
  for a send); it says yes only when the question also names its target, which guards the yes;
- `in_policy`: the stems that find the action in a domain's policy text (`policy_stems`), each read as the start
  of a word ("modif" finds "modified"); `words` unless given. Given for the verbs the policy excerpt had stems of
  its own for (it kept a verb table of its own) and for a transfer (the excerpt read only "transfer"): reading
  `words` for every verb, stemmed as `words_regex` stems them, with or without the record nouns ("reservation" for
  a booking), changes the policy excerpts of the airline specs (measured); keeping these and reading `words` for
  every other verb keeps every excerpt as it was.

The table was two (the user's and the checks'). The user reading every word of both changes nothing measured (the
snapshot of mined specs and env checks on the eight data sets, and both hand-labelled agreement figures); the
checks reading the user's words does: "edit", "add", "remove" for an update change what is mined on tau-bench and
tau2 airline and tau2 retail, the synonyms of "change" change it on the utility domain (`change_plan`), and
"reimburse", "replace", "send back" and "issue" take the confirmation labeler from 48 to 46 of its 48 rows and change
what is mined on tau-bench airline, tau2 retail and telecom. So those words are the user's own reach. The user's
words for a transfer ("hand over", "human", ...) change nothing when the checks read them too: they are everyone's.

Two views of a tool's words come from it:

- `action_words(tool)` (the reward and the labelers): the words that must name `tool`'s action in a confirmation
  question or a refusal: the verb's `words` and `in_questions`, and, for a tool named verb_record_thing (three
  words or more, or two with a light verb such as `make_payment`), the thing acted on, singular and plural, with
  `THING_EXTRA`;
- `request_words(tool)` (the scripted user): every `action_words`, so the user hears its request named whenever the
  reward does, and also the verb's `to_the_user` words and the tool name's last word with `NOUN_SYNONYMS`.

Neither counts a word that only names the record (`RECORD_NOUNS`: "reservation", "order", "details", "id", ...).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple


class Synonyms(NamedTuple):
    """The words for one verb's action, by who reads them (see the module docstring). Entries may be word prefixes
    ("compensat")."""

    words: tuple[str, ...]
    in_questions: tuple[str, ...] = ()
    to_the_user: tuple[str, ...] = ()
    in_policy: tuple[str, ...] | None = None


# Verbs that say a tool reads or writes (trace_envs.trajectories.kinds reads kinds from them).
READ_VERBS = {
    "get", "search", "find", "list", "lookup", "look", "check", "fetch", "read", "query", "show", "view",
    "retrieve", "describe", "count", "verify", "validate", "inspect", "browse",
}  # fmt: skip
WRITE_VERBS = {
    "cancel", "book", "update", "modify", "create", "delete", "send", "return", "exchange", "add", "remove", "set",
    "change", "place", "make", "submit", "pay", "refund", "upgrade", "downgrade", "toggle", "enable", "disable",
    "reset", "register", "apply", "issue", "edit", "write", "insert", "save", "post", "put", "patch", "assign",
    "reserve", "purchase", "buy", "grant", "revoke", "block", "unblock", "suspend", "resume", "transfer",
    "move", "rename", "archive", "approve", "reject", "reboot", "restart", "open", "close", "schedule", "renew",
    "waive", "charge", "credit", "debit", "deposit", "withdraw", "enroll", "unenroll", "subscribe", "unsubscribe",
    "activate", "deactivate", "lock", "unlock", "freeze", "unfreeze", "extend", "release", "void", "redeem",
    "forgive", "settle", "reinstate", "restore", "reopen", "reschedule", "rebook", "dispute", "replace",
    # more verbs of change that name a tool's action in any domain (no noun among them: "leave", "file", "hold",
    # "request", "claim" and "note" head or end noun-first names such as leave_request_submit)
    "attach", "detach", "split", "merge", "convert", "expedite", "reassign", "link", "unlink", "mark", "flag",
    "allocate", "authorize", "accept", "decline", "sign", "prescribe", "refill", "dispatch", "ship", "install",
    "uninstall", "provision", "recharge", "postpone", "defer", "revert", "resubmit", "terminate", "initiate",
    "invite", "tag",
}  # fmt: skip

# More verbs a tool's name may act by, where it puts the verb (`appointment_confirm`, `reminder_call_request`,
# `checkbooks.order`); the kind sets leave them out, since some also head a read's name as nouns (`order_details`).
ACTION_VERBS = frozenset({
    "confirm", "drop", "pause", "unpause", "raise", "lower", "report", "request", "switch", "audit", "amend", "order",
    "review", "increase", "decrease", "reduce", "adjust", "correct", "fix",
})  # fmt: skip
# Verbs that are as often the noun a noun-first name starts with (`transfer_limit_raise`, `freeze_fee_forgive`,
# `return_branch_modify`): at the head of a name whose last word is a verb that is no such noun, the last word acts.
NOUN_VERBS = frozenset({
    "transfer", "return", "exchange", "order", "freeze", "credit", "deposit", "refund", "update", "request", "report",
    "charge", "claim", "hold", "release", "flag", "tag", "link", "mark", "dispute", "reset", "schedule", "post",
    "split", "merge", "upgrade", "downgrade", "block", "lock", "change", "refuel", "switch", "review", "check",
    "search", "count", "view", "lookup", "rebook", "reserve",
})  # fmt: skip

VERB_SYNONYMS: dict[str, Synonyms] = {
    "update": Synonyms(("update", "change", "modify"), ("add",), ("edit", "remove"), ("update", "change", "modif")),
    "modify": Synonyms(("modify", "change", "update"), ("add",), ("edit", "remove"), ("modif", "change", "update")),
    "change": Synonyms(("change",), (), ("update", "modify", "edit")),
    "edit": Synonyms(("edit",), (), ("change", "update", "modify")),
    "book": Synonyms(("book", "reserve", "reservation"), in_policy=("book",)),
    "reserve": Synonyms(("reserve",), (), ("book",)),
    "refund": Synonyms(("refund",), (), ("reimburse",)),
    "exchange": Synonyms(("exchange", "swap"), (), ("replace",), ("exchang",)),
    "return": Synonyms(("return",), (), ("send back",)),
    "send": Synonyms(("send", "compensat", "certificate"), (), ("issue",)),
    "transfer": Synonyms(("transfer", "hand over", "connect", "escalate", "human", "representative"),
                         in_policy=("transfer",)),
    "remove": Synonyms(("remove",), (), ("delete",)),
    "delete": Synonyms(("delete",), (), ("remove",)),
    "refuel": Synonyms(("refuel", "top up"), ("add",)),
    "enable": Synonyms(("enable", "activate", "turn on")),
    "resume": Synonyms(("resume", "reactivate", "restore")),
    "suspend": Synonyms(("suspend", "deactivate")),
    "pay": Synonyms(("pay", "charge")),
    "charge": Synonyms(("charge", "pay")),
}

# Words for changing the thing acted on ("upgrade" a reservation's flights to business, "swap" an order's items).
THING_EXTRA = {"flights": ("upgrade", "downgrade", "switch"), "items": ("swap", "switch", "replace"),
               "payment": ("pay", "charge")}
# Other words for what a tool acts on (the tool name's last word), singular forms included.
NOUN_SYNONYMS: dict[str, tuple[str, ...]] = {
    "baggages": ("baggage", "bags", "bag", "luggage"),
    "baggage": ("baggage", "bags", "bag", "luggage"),
    "bags": ("bags", "bag", "baggage", "luggage"),
    "flights": ("flights", "flight"),
    "passengers": ("passengers", "passenger"),
    "items": ("items", "item"),
    "certificate": ("certificate", "voucher", "compensation"),
    "agents": ("agent", "agents"),
    "agent": ("agent", "agents"),
    "payment": ("payment", "card"),
    "address": ("address",),
    "cabin": ("cabin", "class"),
}

# Verbs too plain to name an action by themselves ("make_payment"): the thing they act on names it, even in a
# two-word name.
LIGHT_VERBS = frozenset({"make", "do", "process", "issue", "apply", "submit", "create", "perform", "place", "file"})
# Last words of a tool name that only name the record (`cancel_pending_order`): nearly every message mentions the
# record, so they would not show which action is meant.
RECORD_NOUNS = frozenset(
    "reservation reservations booking bookings order orders user users account accounts customer customers profile "
    "record records details detail info information id ids".split()
)
# Words that name nothing on their own: "I already paid *the* premium *on my* policy", "make *my* appointment *a* video
# visit". Whatever words a domain's users share beyond these are its own.
FUNCTION_WORDS = frozenset({"the", "a", "an", "my", "your", "our", "their", "its", "this", "that", "these", "those",
                            "on", "in", "of", "for", "to", "from", "with", "and", "or", "at", "by", "me", "we", "you",
                            "they", "them", "so", "just", "also", "all", "but", "yet", "now", "then", "there", "it",
                            "is", "are", "was", "be", "can", "could", "would", "will", "please", "want", "like", "need",
                            "i", "i'm", "i'd", "hi", "hello", "thanks", "thank", "some", "any", "one", "too", "as"})
_POLICY_GENERIC = frozenset({"pending", "delivered", "items"})
# Words of tool names that hand the conversation to a person (`transfer_to_human_agents`, `escalate`, ...).
HANDOFF_TOOL_WORDS = ("transfer", "handoff", "hand_off", "escalat", "human")


def tool_words(tool: str) -> list[str]:
    """The lower-case words of a tool name, verb first: `update_reservation_baggages` and
    `updateReservationBaggages` alike; a noun-first name's verb is moved to the front (`vehicles.upgrade`,
    `leave_request_submit` -> submit, leave, request), so every reader finds the verb at the head; a dotted name's
    last part is its action (`exchange_rates.lookup` -> lookup, exchange, rates)."""
    return list(_tool_words(tool))


@lru_cache(maxsize=4096)
def _tool_words(tool: str) -> tuple[str, ...]:
    # read once per name: the miner and the scripted user ask for the same few names tens of thousands of times
    return tuple(_read_tool_words(tool))


def _read_tool_words(tool: str) -> list[str]:
    words = _split(tool)
    acts = dotted_action(tool)
    head = _split(tool.rpartition(".")[0])
    if acts and (_is_verb(acts[0]) or not (head and _is_verb(head[0]))):
        # a dotted name is resource.action: `exchange_rates.lookup` looks up, though "exchange" is a verb too, and
        # `enrollments.audit` audits, a verb no list need hold
        return [*acts, *head]
    if len(words) >= 2 and _is_verb(words[-1]) and (not _is_verb(words[0]) or noun_headed(words)):
        return [words[-1], *words[:-1]]
    return words


def noun_headed(words: list[str]) -> bool:
    """Whether a name's head is a noun that is also a verb and its last word is no such noun (`freeze_fee_remove`,
    `exchange_rates_retrieve`): if the last word is a verb, it is the one that acts."""
    return len(words) >= 2 and words[0] in NOUN_VERBS and words[-1] not in NOUN_VERBS


def _split(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return [w for w in re.split(r"[^a-z0-9]+", spaced) if w]


def dotted_action(tool: str) -> list[str]:
    """The words of a dotted name's last part, its action (`exchange_rates.lookup` -> lookup); none for a name
    without a dot."""
    head, dot, action = tool.rpartition(".")
    return _split(action) if dot and head else []


def _is_verb(word: str) -> bool:
    return word in READ_VERBS or word in WRITE_VERBS or word in VERB_SYNONYMS or word in ACTION_VERBS


def tool_verb(tool: str) -> str:
    """A tool's verb: its leading word, or the last of a noun-first name ("" when it has no words)."""
    return (tool_words(tool) or [""])[0]


def is_handoff_tool(tool: str) -> bool:
    """A tool that hands the conversation to a person (`transfer_to_human_agents`, `escalate`, ...)."""
    return any(w in tool.lower() for w in HANDOFF_TOOL_WORDS)


def _synonyms(verb: str) -> Synonyms:
    return VERB_SYNONYMS.get(verb) or Synonyms((verb,))


@lru_cache(maxsize=4096)
def verb_synonyms(tool: str) -> tuple[str, ...]:
    """Words a user asking for `tool`'s action would likely use (its leading verb and a few synonyms)."""
    return _synonyms(tool_verb(tool)).words


def policy_stems(tool: str) -> tuple[str, ...]:
    """The stems that find `tool`'s action in a policy's text (see `Synonyms.in_policy`)."""
    verb = _synonyms(tool_verb(tool))
    return verb.in_policy or verb.words


def policy_nouns(tool: str) -> list[str]:
    """The nouns of `tool`'s name that find its block in a policy (each read as the start of a word, a plural "s"
    cut off): not a record noun, nor a state or a generic part ("pending", "delivered", "items") that every block of a
    retail policy holds."""
    return [w.rstrip("s") for w in tool_words(tool)[1:] if w not in RECORD_NOUNS | _POLICY_GENERIC and len(w) > 2]


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
    verb = _synonyms(head)
    out = [] if head in LIGHT_VERBS and has_thing else list(verb.words)
    out += verb.in_questions
    if has_thing:
        out += [thing, thing[:-1]] if thing.endswith("s") and len(thing) > 3 else [thing, thing + "s"]
        out += THING_EXTRA.get(thing, ())
    return list(dict.fromkeys(out))


def request_words(tool: str) -> tuple[str, ...]:
    """Words by which the scripted user recognizes its request for `tool` in an agent's message: every word the
    reward reads as naming the action (`action_words`), every other word for the verb, and what it acts on (the
    name's last word, unless that word only names the record, with `NOUN_SYNONYMS`). `cancel_reservation` ->
    `("cancel",)`; `update_reservation_baggages` -> update, change, modify, add, baggages, baggage, edit, remove,
    bags, bag, luggage."""
    words = tool_words(tool)
    if not words:
        return ()
    verb, rest = words[0], words[1:]
    syn = _synonyms(verb)
    out = [*action_words(tool), *syn.words, *syn.in_questions, *syn.to_the_user]
    if rest and rest[-1] not in RECORD_NOUNS:
        out += [rest[-1], *NOUN_SYNONYMS.get(rest[-1], ())]
    return tuple(dict.fromkeys(out))
