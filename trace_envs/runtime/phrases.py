"""Plain-English phrasing of requests and replies from tool names, used by family templates."""

from __future__ import annotations

import re


def request_phrase(tool: str) -> str:
    """`cancel_reservation` -> `cancel a reservation`; `update_reservation_flights` -> `update the reservation flights`."""
    words = tool.split("_")
    if len(words) == 1:
        return f"use {tool}"
    verb, rest = words[0], " ".join(words[1:])
    return f"{verb} the {rest}"


def done_message(tool: str, target: str) -> str:
    """A closing message that asks nothing (so the scripted user ends the conversation)."""
    return f"Done: I completed the {tool.replace('_', ' ')} request for {target}. Have a nice day."


def key_noun(key: str) -> str:
    """`reservation_id` -> `reservation`: what a key argument identifies."""
    for suffix in ("_id", "_number", "_no", "_num", "_code"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)].replace("_", " ")
    return "record"


def path_words(path: str) -> str:
    """A dotted record path in words: `cabin` -> `cabin`; `flights.0.status` -> `status of the first flight`;
    `payment_history.*.amount` -> `amount over the payment history`."""
    parts = path.split(".")
    words = [p.replace("_", " ") for p in parts if not p.isdigit() and p != "*"]
    if len(words) >= 2 and "*" in parts:  # a sum over a list's items: `payment_history.*.amount`
        return f"{' '.join(words[1:])} over the {words[0]}"
    if len(words) >= 2 and any(p.isdigit() for p in parts):
        head = words[0][:-1] if words[0].endswith("s") else words[0]
        return f"{' '.join(words[1:])} of the first {head}" if "0" in parts else f"{' '.join(words[1:])} of a {head}"
    return " ".join(words)


# Words a person uses for a tool's action, by the tool name's leading verb. "add"/"remove" sit under update and modify
# because users name those writes by what they change ("add a bag", "remove a passenger").
VERB_SYNONYMS: dict[str, tuple[str, ...]] = {
    "update": ("update", "change", "modify", "edit", "add", "remove"),
    "modify": ("modify", "change", "update", "edit", "add", "remove"),
    "change": ("change", "update", "modify", "edit"),
    "edit": ("edit", "change", "update", "modify"),
    "cancel": ("cancel",),
    "book": ("book", "reserve"),
    "reserve": ("reserve", "book"),
    "refund": ("refund", "reimburse"),
    "exchange": ("exchange", "swap", "replace"),
    "return": ("return", "send back"),
    "send": ("send", "issue"),
    "transfer": ("transfer", "hand over", "connect", "escalate", "human", "representative"),
    "upgrade": ("upgrade",),
    "downgrade": ("downgrade",),
    "add": ("add",),
    "remove": ("remove", "delete"),
    "delete": ("delete", "remove"),
}
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
# Words that name the record an action is about, not the action: "reservation" names no action on a reservation.
RECORD_NOUNS = frozenset(
    "reservation reservations booking bookings order orders user users account accounts customer customers profile "
    "record records details detail info information id ids".split()
)


def tool_words(tool: str) -> list[str]:
    """`update_reservation_baggages` -> `["update", "reservation", "baggages"]` (camelCase split too)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).lower()
    return [w for w in re.split(r"[^a-z0-9]+", spaced) if w]


def action_words(tool: str) -> tuple[str, ...]:
    """Words that name `tool`'s action in a message: its leading verb with synonyms, and what it acts on (the name's
    last word, unless that word only names the record). `cancel_reservation` -> `("cancel",)`;
    `update_reservation_baggages` -> update, change, modify, edit, add, remove, baggages, baggage, bags, bag, luggage."""
    words = tool_words(tool)
    if not words:
        return ()
    verb, rest = words[0], words[1:]
    out = list(VERB_SYNONYMS.get(verb, (verb,)))
    if rest and rest[-1] not in RECORD_NOUNS:
        out += [rest[-1], *NOUN_SYNONYMS.get(rest[-1], ())]
    return tuple(dict.fromkeys(out))


def user_phrase(tool: str, key: str | None = None, target: str | None = None) -> str:
    """How a user names a request for `tool` on the record `target` (identified by argument `key`):
    `cancel_reservation` -> `cancel reservation QZ7Y2K`; `update_reservation_baggages` -> `update the baggages of
    reservation QZ7Y2K`; without a target, `request_phrase(tool)`."""
    if target is None:
        return request_phrase(tool)
    noun = key_noun(key) if key else "record"
    words = tool_words(tool)
    verb, rest = (words[0], words[1:]) if words else ("use", [])
    if not rest or rest[-1] in noun.split():
        return " ".join([verb, *rest[:-1], noun, target]) if rest else f"{verb} {noun} {target}"
    what = " ".join(w for w in rest if w not in noun.split())
    return f"{verb} the {what} of {noun} {target}"
