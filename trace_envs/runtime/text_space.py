"""`SharedText`: a Gymnasium `Text` space whose values survive `AsyncVectorEnv`'s shared memory.

Gymnasium 1.x decodes a `Text` space's shared memory once, when `AsyncVectorEnv` is built, into a tuple of strings:
the buffer is still all zeros then, so every later observation reads back as `max_length` copies of the charset's
first character (100,000 tabs here) whatever the workers wrote. Numeric spaces escape this because their read gives
a live numpy view. `SharedText` gives text the same: its read returns a view that decodes the buffer when indexed,
and a deep copy of it (what `AsyncVectorEnv` hands out with its default `copy=True`) is a plain tuple of strings,
exactly what `SyncVectorEnv` returns. Creating and writing the buffer stay Gymnasium's own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import read_from_shared_memory

_CHUNK = 4096


class SharedText(spaces.Text):
    """A `Text` space that `gym.make_vec(..., vectorization_mode="async")` round-trips through shared memory."""


class SharedTextView(Sequence[str]):
    """The `n` strings a `SharedText` buffer holds, decoded on access, so they follow what the workers write."""

    def __init__(self, space: SharedText, buffer: Any, n: int):
        """`space`: the single env's observation space; `buffer`: the `multiprocessing.Array` of int32 character
        indexes, `n` rows of `space.max_length`, padded with `len(space.character_set)`; `n`: the number of envs."""
        self._rows = np.frombuffer(buffer.get_obj(), dtype=np.int32).reshape((n, space.max_length))
        self._chars = np.array(space.character_list, dtype=object)
        self._pad = len(space.character_set)

    def __len__(self) -> int:
        return self._rows.shape[0]

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        row = self._rows[index]
        # Gymnasium's write (`flatten`) puts the text first and pads the rest of the 100,000-long row, so the text
        # ends at the first pad; look for it a chunk at a time, since observations are mostly short.
        end = len(row)
        for start in range(0, len(row), _CHUNK):
            hits = np.flatnonzero(row[start : start + _CHUNK] >= self._pad)
            if hits.size:
                end = start + int(hits[0])
                break
        return "".join(self._chars[row[:end]])

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)


@read_from_shared_memory.register(SharedText)
def _read_shared_text(space: SharedText, shared_memory: Any, n: int = 1) -> SharedTextView:
    return SharedTextView(space, shared_memory, n)
