"""Plain-English phrasing of requests and replies from tool names, used by family templates (how a scripted user
or an oracle says a thing; how messages are read lives in `trace_envs.language`)."""

from __future__ import annotations

from trace_envs.language.words import tool_words


def request_phrase(tool: str) -> str:
    """`cancel_reservation` -> `cancel the reservation`; `update_reservation_flights` -> `update the reservation
    flights`; `reassignApprover` -> `reassign the approver`, whatever the naming style."""
    words = tool_words(tool)
    if len(words) < 2:
        return f"use {tool}"
    verb, rest = words[0], " ".join(words[1:])
    return f"{verb} the {rest}"


def key_noun(key: str) -> str:
    """`reservation_id` -> `reservation`: what a key argument identifies."""
    for suffix in ("_id", "_number", "_no", "_num", "_code"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)].replace("_", " ")
    return "record"


def path_words(path: str) -> str:
    """A dotted record path in words: `cabin` -> `cabin`; `flights.0.status` -> `status of the first flight`;
    `payment_history.*.amount` -> `amount over the payment history`; `rental.state.rental_state` -> `rental state`."""
    parts = path.split(".")
    words = [p.replace("_", " ") for p in parts if not p.isdigit() and p != "*"]
    # a group the field's own name repeats says nothing more: `state.rental_state` -> `rental state`
    words = [w for i, w in enumerate(words) if not any(set(w.split()) <= set(x.split()) for x in words[i + 1:])]
    if len(words) >= 2 and "*" in parts:  # a sum over a list's items: `payment_history.*.amount`
        return f"{' '.join(words[1:])} over the {words[0]}"
    if len(words) >= 2 and any(p.isdigit() for p in parts):
        head = words[0][:-1] if words[0].endswith("s") else words[0]
        return f"{' '.join(words[1:])} of the first {head}" if "0" in parts else f"{' '.join(words[1:])} of a {head}"
    return " ".join(words)


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
