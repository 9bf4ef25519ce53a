"""Errors raised while reading trajectory files."""

from __future__ import annotations


class TrajectoryFormatError(ValueError):
    """A trajectory file (or one run in it) is not in a supported format.

    The message is one line: `<file>: <where>: <what was expected, what was found>`, e.g.
    `gpt-4o-airline.json: run index 3 (task 7): expected "traj" to be a list of messages, got null`.
    `file` and `where` are kept as attributes for callers that want them separately.
    """

    def __init__(self, file: str, where: str | None, message: str) -> None:
        self.file = file
        self.where = where
        self.detail = message
        text = f"{file}: {where}: {message}" if where else f"{file}: {message}"
        super().__init__(" ".join(text.split("\n")))
