"""How a drawn domain's tools answer: the shape of its records and of its errors.

Record shapes: `flat` (one object, every field at the top), `nested` (the record under its noun, its fields grouped
in sub-objects), `list` (the read takes the customer's id and answers with all their records in a list).
Error shapes: `json` (an object with `error`, or `status` and `message`), `flag` (tau2's `error` flag on the tool
message; the text names no error), `exception` (ToolSandbox's `ValueError: ...` line), `text` (plain text with an
error word or a status code: `ERROR 409: ... call X first`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from trace_envs.datasets.randomized.naming import Naming
from trace_envs.datasets.randomized.themes import plural

RECORD_SHAPES = ("flat", "nested", "list")
ERROR_SHAPES = ("json", "flag", "exception", "text")
_GROUPS = (("details", "state"), ("info", "flags"), ("summary", "conditions"), ("attributes", "status"))
_EXCEPTIONS = ("ValueError", "PermissionError", "RuntimeError", "PreconditionError")


@dataclass
class Shapes:
    """A domain's record and error shapes, with the variant of each it drew."""

    record_shape: str
    error_shape: str
    naming: Naming
    groups: tuple[str, str]
    variant: int
    exception: str
    ok_variant: int

    @classmethod
    def draw(cls, record_shape: str, error_shape: str, naming: Naming, rng: random.Random) -> "Shapes":
        return cls(record_shape, error_shape, naming, rng.choice(_GROUPS), rng.randrange(3), rng.choice(_EXCEPTIONS),
                   rng.randrange(3))

    # ---- records ----------------------------------------------------------------------------------------------------
    def record_view(self, noun: str, rec: dict[str, Any], owner_key: str, owner: str) -> dict[str, Any]:
        """One record as its read shows it (flat or nested). `rec` holds `id`, `about` (what it is) and `state`
        (its conditions) as logical field names."""
        f = self.naming.field
        about = {f(k): v for k, v in rec["about"].items()}
        state = {f(k): v for k, v in rec["state"].items()}
        if self.record_shape == "nested":
            return {f(noun): {"id": rec["id"], "owner": {f(owner_key): owner},
                              self.groups[0]: about, self.groups[1]: state}}
        return {f(f"{noun} id"): rec["id"], f(owner_key): owner, **about, **state}

    def list_view(self, noun: str, recs: list[dict[str, Any]], owner_key: str, owner: str) -> dict[str, Any]:
        """Every record of a customer, as a list-shaped read answers."""
        f = self.naming.field
        items = [{f(f"{noun} id"): r["id"], **{f(k): v for k, v in r["about"].items()},
                  **{f(k): v for k, v in r["state"].items()}} for r in recs]
        return {f(owner_key): owner, f(plural(noun)): items}

    def ok(self, noun: str, key: str, done: str, **extra: Any) -> Any:
        """A successful write's reply: a small object with a status, an ok flag and a message, or a text."""
        f = self.naming.field
        if self.ok_variant == 0:
            return {f(f"{noun} id"): key, "status": done, **{f(k): v for k, v in extra.items()}}
        if self.ok_variant == 1:
            return {"ok": True, "message": f"{noun.capitalize()} {key} {done}.", **{f(k): v for k, v in extra.items()}}
        tail = "".join(f", {k.replace('_', ' ')} {v}" for k, v in extra.items())
        return f"Success: {noun} {key} {done}{tail}."

    # ---- errors -----------------------------------------------------------------------------------------------------
    def error(self, message: str, code: int = 409) -> Any:
        """A failed call's reply: JSON, a bare text (the `flag` shape: the writer flags the message), an exception
        line, or text with an error word or code."""
        if self.error_shape == "json":
            return [{"error": message}, {"status": "error", "message": message},
                    {"ok": False, "status": code, "message": message}][self.variant]
        if self.error_shape == "flag":
            return message[:1].upper() + message[1:]
        if self.error_shape == "exception":
            return f"{self.exception}: {message}"
        return [f"ERROR {code}: {message}", f"Request failed ({code}): {message}", f"FAILED - {message}"][self.variant]
