"""The source-format registry: one `register_format` path for the built-in formats and a user's own.

A format is picked by content, never by file name: the loader parses a file once and asks each registered format, in
registration order, whether it claims the parsed document (`sniff`); a JSONL file is offered line by line to the
formats with `sniff_line`; a directory is offered to the formats with `sniff_folder` before it is walked. The first
format that claims a source reads it. Nothing else lists format names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from trace_envs.trajectories.formats.common import Record

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{1,39}")
_FORMATS: dict[str, "SourceFormat"] = {}


class FormatError(ValueError):
    """A format that cannot be registered, or a name no format is registered under."""


class NoRunsHere(Exception):
    """Raised by a reader for a source it recognises that holds no runs by itself (a ToolSandbox conversation.json
    away from its run folder): an error when the file was named, ignored when a walk found it."""


@dataclass(frozen=True)
class SourceFormat:
    """One source format.

    - `name`: a short lower-case name (`tau-bench`, `toolsandbox`); it becomes `Run.source` by convention.
    - `description`: one phrase for the "supported formats" line of the unknown-format error.
    - `sniff(document) -> bool` and `read(document, path, display) -> Iterable[Record]`: a parsed JSON document (any
      JSON value); the sniff must be cheap (look at keys, at the first item), the reader yields `(where, run record)`
      or `(where, RunError)` per run.
    - `sniff_line(obj) -> bool` and `read_line(obj, where, display) -> run record`: JSONL; the first line's object is
      sniffed, every line is read on its own (so a large file streams).
    - `sniff_folder(path) -> bool` and `read_folder(path, display) -> Iterable[Record]`: a directory read as one
      source (a ToolSandbox run folder); its files are then not walked one by one.
    """

    name: str
    description: str
    sniff: Callable[[Any], bool] | None = None
    read: Callable[[Any, Path, str], Iterable[Record]] | None = None
    sniff_line: Callable[[Any], bool] | None = None
    read_line: Callable[[Any, str, str], dict[str, Any]] | None = None
    sniff_folder: Callable[[Path], bool] | None = None
    read_folder: Callable[[Path, str], Iterable[Record]] | None = None


_PAIRS = (("sniff", "read"), ("sniff_line", "read_line"), ("sniff_folder", "read_folder"))


def register_format(fmt: SourceFormat) -> SourceFormat:
    """Register `fmt`; returns it (so a module can write `FORMAT = register_format(SourceFormat(...))`).

    Raises `FormatError` when `fmt` is not a `SourceFormat`, its name is not a short lower-case name, a format of that
    name is already registered, its description is empty, a sniff comes without its reader (or a reader without its
    sniff), a hook is not callable, or it has no sniff at all."""
    if not isinstance(fmt, SourceFormat):
        raise FormatError(f"register_format takes a SourceFormat, got {type(fmt).__name__}")
    if not isinstance(fmt.name, str) or not _NAME.fullmatch(fmt.name):
        raise FormatError(
            f"format name must be 2-40 characters of lower-case letters, digits, '_', '.', '-', got {fmt.name!r}"
        )
    if fmt.name in _FORMATS:
        raise FormatError(f"format {fmt.name!r} is already registered; pick another name")
    problems = []
    if not isinstance(fmt.description, str) or not fmt.description.strip():
        problems.append("description (a phrase for the supported-formats line) is missing")
    for sniff, read in _PAIRS:
        s, r = getattr(fmt, sniff), getattr(fmt, read)
        if (s is None) != (r is None):
            problems.append(f"{sniff} and {read} come together: got only {sniff if r is None else read}")
        for hook, value in ((sniff, s), (read, r)):
            if value is not None and not callable(value):
                problems.append(f"{hook} must be callable, got {type(value).__name__}")
    if all(getattr(fmt, s) is None for s, _ in _PAIRS):
        problems.append("it needs at least one of sniff, sniff_line, sniff_folder")
    if problems:
        raise FormatError(f"format {fmt.name!r}: " + "; ".join(problems))
    _FORMATS[fmt.name] = fmt
    return fmt


def get_format(name: str) -> SourceFormat:
    """The format registered as `name`; `FormatError` naming the registered ones otherwise."""
    fmt = _FORMATS.get(name)
    if fmt is None:
        raise FormatError(f"unknown format {name!r}; registered formats: {', '.join(_FORMATS) or 'none'}")
    return fmt


def all_formats() -> dict[str, SourceFormat]:
    """Every registered format by name, in registration (= sniffing) order."""
    return dict(_FORMATS)


def unregister_format(name: str) -> None:
    """Remove a format (for tests and notebooks that register one and clean up)."""
    _FORMATS.pop(name, None)


def supported_formats() -> str:
    """The "supported formats: ..." clause of the unknown-format error."""
    return "supported formats: " + ", ".join(f.description for f in _FORMATS.values())


def _first_claim(hook: str, subject: Any) -> SourceFormat | None:
    for fmt in _FORMATS.values():
        sniff = getattr(fmt, hook)
        if sniff is not None and sniff(subject):
            return fmt
    return None


def document_format(document: Any) -> SourceFormat | None:
    """The first format whose `sniff` claims a parsed JSON document."""
    return _first_claim("sniff", document)


def line_format(first: Any) -> SourceFormat | None:
    """The first format whose `sniff_line` claims a JSONL file by its first object."""
    return _first_claim("sniff_line", first)


def folder_format(path: Path) -> SourceFormat | None:
    """The first format whose `sniff_folder` claims a directory."""
    return _first_claim("sniff_folder", path)
