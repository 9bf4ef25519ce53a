"""Plain-English phrasing of requests and replies from tool names, used by family templates."""

from __future__ import annotations


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
    for suffix in ("_id", "_number", "_code"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)].replace("_", " ")
    return "record"


def path_words(path: str) -> str:
    """A dotted record path in words: `cabin` -> `cabin`; `flights.0.status` -> `status of the first flight`."""
    parts = path.split(".")
    words = [p.replace("_", " ") for p in parts if not p.isdigit()]
    if len(words) >= 2 and any(p.isdigit() for p in parts):
        head = words[0][:-1] if words[0].endswith("s") else words[0]
        return f"{' '.join(words[1:])} of the first {head}" if "0" in parts else f"{' '.join(words[1:])} of a {head}"
    return " ".join(words)
