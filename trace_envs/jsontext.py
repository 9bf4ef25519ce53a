"""`dumps`: the text `json.dumps(value)` gives with its default arguments, at a third of its cost on small values;
`loads`: `json.loads` at a third of its cost on a short text; `shared_loads`: one parse of a text for every reader of it.

`json.dumps` builds a new C encoder on every call; an env step serialises a tool call's arguments and its result, so
that setup was a tenth of a step. This module builds it once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from json.decoder import JSONDecoder
from json.encoder import c_make_encoder, encode_basestring_ascii
from typing import Any


def _unserialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


if c_make_encoder is not None:
    # json.dumps's defaults (separators, ensure_ascii, allow_nan, float repr), without its cycle check: every value
    # serialised here was parsed from JSON or built from such values, and a cycle still ends in RecursionError
    _ENCODE = c_make_encoder(None, _unserialisable, encode_basestring_ascii, None, ": ", ", ", False, False, True)

    def dumps(value: Any) -> str:
        """`json.dumps(value)`: the same text, TypeError on a value JSON cannot hold."""
        return "".join(_ENCODE(value, 0))
else:  # an interpreter without json's C speedups
    dumps = json.dumps


_SCAN = JSONDecoder().scan_once  # json's C scanner where the interpreter has it: what json.loads runs underneath


def loads(text: str) -> Any:
    """`json.loads(text)`: the same value, or the same exception with the same message. An env step parses the agent's
    action; json.loads's Python layers around the scanner (type checks, two whitespace searches, three calls) were two
    thirds of that parse. A text that does not scan whole from its first character (surrounding whitespace, an error)
    goes to json.loads, for its exception."""
    try:
        value, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


@lru_cache(maxsize=16384)
def shared_loads(text: str) -> Any:
    """`json.loads(text)`, kept for the next reader of the same text: mining reads each tool result of a run a dozen
    times over (the profile, the result index, every detector, the labels), and parsing was a tenth of it. Every
    reader gets the same object, so none may change it. `mine` empties the cache when it is done."""
    return loads(text)
