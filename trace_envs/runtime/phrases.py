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
