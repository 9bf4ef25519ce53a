"""Finding and reading trajectory sources: paths, directories and globs to sources; a file to a parsed JSON document or
a stream of JSONL lines.

Only regular files are ever opened: a FIFO, socket or device found in a folder or glob is skipped with a warning
(opening a FIFO blocks until a writer comes), and a named one is an error. Files are opened non-blocking and checked
again after opening, so a file swapped for a FIFO in between cannot hang the load either.
"""

from __future__ import annotations

import glob as _glob
import json
import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from trace_envs.trajectories.errors import TrajectoryFormatError

TRAJECTORY_SUFFIXES = (".json", ".jsonl")
_GLOB_CHARS = set("*?[")
_SNIFF_BYTES = 65536
_SNIFF_LINES = 5
LOG = logging.getLogger("trace_envs.trajectories")

_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _special_kind(mode: int) -> str | None:
    """What a non-regular file is, for the warning; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _fix_surrogates(text: str) -> str:
    # A lone surrogate escape (half of a UTF-16 pair) decodes to a str that cannot be written as UTF-8 again.
    return _LONE_SURROGATE.sub(r"\\ufffd", text) if "\\u" in text and _SURROGATE.search(text) else text


def _open_regular(path: Path, display: str):
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise TrajectoryFormatError(display, None, f"cannot read file: {exc.strerror or exc}") from None
    kind = _special_kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise TrajectoryFormatError(display, None, f"not a regular file ({kind}); not read")
    return os.fdopen(fd, "rb")


def _decode(raw: bytes, display: str) -> str:
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise TrajectoryFormatError(display, None, "not a text file (contains NUL bytes); expected JSON or JSONL")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrajectoryFormatError(
            display, None, f"not a text file (invalid UTF-8 at byte {exc.start}); expected JSON or JSONL"
        ) from None
    return _fix_surrogates(text[1:] if text.startswith("\ufeff") else text)


@dataclass
class JsonLines:
    """A JSONL file read line by line: the first objects (for sniffing) and every line as `(line number, text)`."""

    path: Path
    display: str
    first: list[Any]

    def lines(self) -> Iterator[tuple[int, str | None, str | None]]:
        """`(line number, text, None)` per non-blank line, or `(line number, None, why)` for one that is not UTF-8."""
        with _open_regular(self.path, self.display) as f:
            for n, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield n, None, f"not UTF-8 text (invalid byte at column {exc.start + 1})"
                    continue
                if n == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield n, _fix_surrogates(text), None


def _leading_objects(f, limit: int) -> tuple[list[Any], bool]:
    """The JSON values of the first `limit` non-blank lines (None where a line is not JSON), and whether the first
    non-blank line was a complete JSON object followed by more text: the mark of JSONL."""
    values: list[Any] = []
    first_is_object = False
    for raw in f:
        if not raw.strip():
            continue
        if len(values) == limit:
            return values, first_is_object
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        if not values and not isinstance(value, dict):
            return [value], False
        first_is_object = True
        values.append(value)
    return values, first_is_object and len(values) > 1


def read_source(path: Path, display: str) -> Any | JsonLines:
    """The parsed JSON document of a file, or a `JsonLines` stream when it is JSONL (its first line a complete JSON
    object and more lines after it). Raises TrajectoryFormatError for an unreadable, empty, binary or invalid file."""
    with _open_regular(path, display) as f:
        head = f.read(_SNIFF_BYTES)
        if b"\x00" in head:
            _decode(head, display)
        f.seek(0)
        first, streaming = _leading_objects(f, _SNIFF_LINES)
        if streaming:
            return JsonLines(path, display, [v for v in first if v is not None])
        f.seek(0)
        raw = f.read()
    if not raw.strip():
        from trace_envs.trajectories.formats.registry import supported_formats

        raise TrajectoryFormatError(display, None, f"file is empty; expected JSON or JSONL ({supported_formats()})")
    text = _decode(raw, display)
    try:
        return json.loads(text)
    except RecursionError:
        raise TrajectoryFormatError(display, None, "JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        if _looks_like_jsonl(text):
            return JsonLines(path, display, _first_values(text))
        rest = text[exc.pos :].rstrip()
        truncated = exc.pos >= len(text.rstrip()) - 1 or (
            exc.msg.startswith("Unterminated string") and "\n" not in rest
        )
        msg = exc.msg.removesuffix(" starting at").removesuffix(" at")
        hint = "; the file looks truncated" if truncated else ""
        raise TrajectoryFormatError(
            display, f"line {exc.lineno} column {exc.colno}", f"invalid JSON ({msg}{hint})"
        ) from None
    except ValueError as exc:  # not a JSONDecodeError: e.g. an integer literal over the int-string conversion limit
        if _looks_like_jsonl(text):
            return JsonLines(path, display, _first_values(text))
        raise TrajectoryFormatError(display, None, f"invalid JSON ({exc})") from None


def _first_values(text: str) -> list[Any]:
    out = []
    for ln in [ln for ln in text.splitlines()[:50] if ln.strip()][:_SNIFF_LINES]:
        try:
            out.append(json.loads(ln))
        except (ValueError, RecursionError):
            continue
    return out


def _looks_like_jsonl(text: str) -> bool:
    """Several lines of which one of the first five is a JSON object: a JSONL file with a bad line somewhere."""
    lines = [ln for ln in text.splitlines()[:50] if ln.strip()]
    if len(lines) < 2:
        return False
    for k, ln in enumerate(lines[:_SNIFF_LINES]):
        try:
            obj = json.loads(ln)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and (k == 0 or "messages" in obj):
            return True
    return False


# --------------------------------------------------------------------------------------------------------------------
# paths


def _warn_special(path: Path, kind: str, warnings: list[str]) -> None:
    msg = f"{path}: skipped, {kind}, not a regular file; it was not opened"
    warnings.append(msg)
    LOG.warning("warning: %s", msg)


def _walk(directory: Path, is_unit: Callable[[Path], bool], warnings: list[str]) -> list[tuple[Path, bool]]:
    """Trajectory files under `directory` (sorted), and folders a format reads whole (not walked into)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        base = Path(root)
        units = [d for d in dirs if not d.startswith(".") and is_unit(base / d)]
        found.extend(base / d for d in units)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in units)
        for f in files:
            if not f.endswith(TRAJECTORY_SUFFIXES) or f.startswith("."):
                continue
            p = base / f
            try:
                kind = _special_kind(p.stat().st_mode)
            except OSError:
                continue  # a dangling symlink: nothing to read
            if kind is not None:
                _warn_special(p, kind, warnings)
                continue
            found.append(p)
    return [(p, False) for p in sorted(found)]


def expand_paths(
    paths: Iterable[str | Path],
    is_unit: Callable[[Path], bool] = lambda p: False,
    warnings: list[str] | None = None,
) -> list[tuple[Path, bool]]:
    """Sources to read as `(path, explicit)`: directories are walked (`*.json`, `*.jsonl`, sorted) and globs expanded;
    a directory `is_unit` claims (a ToolSandbox run folder) is one source and is not walked into.

    `explicit` is False for sources found by a walk or a glob; those are ignored when they hold valid JSON that is no
    trajectory format (tasks.json beside results). Special files found by a walk or glob are skipped with a warning
    (added to `warnings`). Raises TrajectoryFormatError for a path that matches nothing or is a special file."""
    out: list[tuple[Path, bool]] = []
    seen: set[str] = set()
    warnings = [] if warnings is None else warnings

    def add(p: Path, explicit: bool) -> None:
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            out.append((p, explicit))

    def add_dir(p: Path, explicit: bool) -> None:
        if is_unit(p):
            add(p, explicit)
            return
        for f, e in _walk(p, is_unit, warnings):
            add(f, e)

    for raw in paths:
        s = str(raw)
        p = Path(s)
        if p.is_dir():
            add_dir(p, True)
        elif p.is_file():
            add(p, True)
        elif _GLOB_CHARS & set(s):
            matches = sorted(_glob.glob(s, recursive=True))
            if not matches:
                raise TrajectoryFormatError(s, None, "no files match this pattern")
            for m in matches:
                mp = Path(m)
                if mp.is_dir():
                    add_dir(mp, False)
                elif mp.is_file():
                    add(mp, False)
                elif mp.exists():
                    _warn_special(mp, _special_kind(mp.stat().st_mode) or "not a regular file", warnings)
        elif p.exists():
            raise TrajectoryFormatError(s, None, f"not a regular file or directory ({_special_kind(p.stat().st_mode)})")
        else:
            raise TrajectoryFormatError(s, None, "no such file or directory")
    return out
