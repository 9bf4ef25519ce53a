"""Load real agent runs from files, directories and globs, in any registered source format.

The format is picked from the content, never from the name (see `trace_envs.trajectories.formats`): tau-bench
trajectories, tau2-bench results (wrapped or a bare list), OpenAI-messages JSONL, ToolSandbox run folders, and any
format a user registers. A JSONL file streams: `iter_runs` holds one run at a time (and, per file, the first runs until
their domain is known).

Every problem becomes one `TrajectoryFormatError` whose message names the file and where in it (`line N` for JSONL,
`run index N (task X)` for JSON, `per_scenario_results[N]` for ToolSandbox) and what was expected. With
`skip_invalid=True` bad runs (and unreadable files) are skipped and reported in `LoadResult.skipped` instead.

Runs are built from plain dicts after cheap structural checks and validated by pydantic in one pass per run; nothing
read from a file is ever executed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from trace_envs.trajectories import formats
from trace_envs.trajectories.errors import TrajectoryFormatError
from trace_envs.trajectories.files import TRAJECTORY_SUFFIXES, JsonLines, expand_paths as _expand, read_source
from trace_envs.trajectories.formats.common import SUCCESS_EPS, Record, RunError, guess_domain, jtype, validate_run
from trace_envs.trajectories.formats.registry import NoRunsHere, supported_formats
from trace_envs.trajectories.models import Run

__all__ = [
    "LoadResult",
    "TrajectoryFormatError",
    "SUPPORTED_FORMATS",
    "SUCCESS_EPS",
    "TRAJECTORY_SUFFIXES",
    "expand_paths",
    "guess_domain",
    "iter_runs",
    "load_file",
    "load_runs",
    "summarize",
]

SUPPORTED_FORMATS = supported_formats()
"""The built-in formats' clause of the unknown-format error (errors name every format registered at the time)."""
DOMAIN_GUESS_RUNS = 10_000
"""A file without domain names gets one guess from the tools of its first this-many runs (all of them, below that)."""

# Kept for callers (and tests) of the names this module had before the formats moved out.
_RunError = RunError
_validate_run = validate_run


@dataclass
class LoadResult:
    """What `load_runs` read."""

    runs: list[Run] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One message per skipped run (or skipped file), `<file>: <where>: <why>`."""
    files: list[str] = field(default_factory=list)
    """Sources read (files, and folders a format reads whole), in order."""
    ignored: list[str] = field(default_factory=list)
    """Files found while walking a directory or glob that are valid JSON but no trajectory format (e.g. tasks.json)."""
    warnings: list[str] = field(default_factory=list)
    """Special files (FIFOs, sockets, devices) found while walking, skipped unopened."""


class _UnknownFormat(Exception):
    pass


def _unknown_format(data: Any) -> str:
    if isinstance(data, dict):
        keys = ", ".join(list(data)[:8]) or "none"
        got = f"a JSON object with keys: {keys}"
    elif isinstance(data, list):
        first = next((x for x in data if isinstance(x, dict)), None)
        got = f"a JSON list of {jtype(data[0]) if data else 'nothing'}" + (
            f" items (first keys: {', '.join(list(first)[:8])})" if first else "s"
        )
    else:
        got = f"JSON {jtype(data)}"
    return f"unknown trajectory format: got {got}; {supported_formats()}"


def _is_folder_source(path: Path) -> bool:
    return formats.folder_format(path) is not None


def expand_paths(paths: Iterable[str | Path], warnings: list[str] | None = None) -> list[tuple[Path, bool]]:
    """Sources to read as `(path, explicit)`: files, folders a format reads whole, and the files found by walking
    directories (`*.json`, `*.jsonl`, sorted) and expanding globs. See `trace_envs.trajectories.files.expand_paths`."""
    return _expand(paths, _is_folder_source, warnings)


def _jsonl_records(lines: JsonLines, fmt: formats.SourceFormat) -> Iterator[Record]:
    for n, text, bad in lines.lines():
        where = f"line {n}"
        if bad is not None:
            yield where, RunError(where, bad)
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError or an over-long integer literal
            col = f" column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else (
                "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            )
            yield where, RunError(f"{where}{col}", f"invalid JSON ({msg})")
            continue
        try:
            yield where, fmt.read_line(obj, where, lines.display)
        except RunError as exc:
            yield where, exc


def _source_records(path: Path, display: str) -> Iterable[Record]:
    """Detect the format of one source and return its records; `_UnknownFormat` when no format claims it."""
    if path.is_dir():
        fmt = formats.folder_format(path)
        if fmt is None:
            raise _UnknownFormat(f"no trajectory format reads this folder; {supported_formats()}")
        return fmt.read_folder(path, display)
    source = read_source(path, display)
    if isinstance(source, JsonLines):
        fmt = next((f for obj in source.first if (f := formats.line_format(obj)) is not None), None)
        if fmt is None:
            first = next((x for x in source.first if isinstance(x, dict)), {})
            raise _UnknownFormat(
                f"unknown trajectory format: got JSON lines (first keys: {', '.join(list(first)[:8]) or 'none'}); "
                f"{supported_formats()}"
            )
        return _jsonl_records(source, fmt)
    if isinstance(source, list) and not source:
        raise TrajectoryFormatError(display, None, "expected a list of runs, got an empty list")
    fmt = formats.document_format(source)
    if fmt is None:
        raise _UnknownFormat(_unknown_format(source))
    return fmt.read(source, path, display)


def _unique_id(base: str, used: set[str]) -> str:
    if base not in used:
        used.add(base)
        return base
    k = 2
    while f"{base}~{k}" in used:
        k += 1
    used.add(f"{base}~{k}")
    return f"{base}~{k}"


@dataclass
class _LoadState:
    skip_invalid: bool
    result: LoadResult
    used_ids: set[str] = field(default_factory=set)
    trials: Counter = field(default_factory=Counter)
    """Runs seen per (source, task) for sources that number trials by load order (ToolSandbox run folders)."""


def _problem(state: _LoadState, err: TrajectoryFormatError) -> None:
    if not state.skip_invalid:
        raise err
    state.result.skipped.append(str(err))


def _finish(rec: dict[str, Any], where: str, stem: str, display: str, state: _LoadState) -> Run | None:
    if rec.get("trial") is None:
        key = (rec.get("source"), rec.get("task_id"))
        rec["trial"] = state.trials[key]
        state.trials[key] += 1
    run_id = _unique_id(f"{stem}/{rec['task_id']}/{rec['trial']}", state.used_ids)
    rec["run_id"] = run_id
    try:
        return validate_run(rec, where)
    except RunError as exc:
        state.used_ids.discard(run_id)
        _problem(state, TrajectoryFormatError(display, exc.where, exc.message))
        return None


def _load_one(path: Path, explicit: bool, state: _LoadState) -> Iterator[Run]:
    display = str(path)
    try:
        try:
            records = iter(_source_records(path, display))
        except (_UnknownFormat, NoRunsHere) as exc:
            if not explicit:
                state.result.ignored.append(f"{display}: {exc}")
                return
            raise TrajectoryFormatError(display, None, str(exc)) from None
    except TrajectoryFormatError as exc:
        _problem(state, exc)
        return
    stem = path.name if path.is_dir() else path.stem
    skipped_before = len(state.result.skipped)
    count = 0
    for where, rec in _with_domains(records, display, state):
        run = _finish(rec, where, stem, display, state)
        if run is not None:
            count += 1
            yield run
    if not count and len(state.result.skipped) == skipped_before:
        _problem(state, TrajectoryFormatError(display, None, "no runs found"))
    state.result.files.append(display)


def _with_domains(records: Iterable[Record], display: str, state: _LoadState) -> Iterator[tuple[str, dict]]:
    """The good records of one source, each with a domain: a source without domain names gets one guess for the
    whole file (a run that used no tools still belongs to it) from the tools of its first DOMAIN_GUESS_RUNS runs, so
    that a large file still streams. Bad records become errors (or skips)."""
    pending: list[tuple[str, dict[str, Any]]] = []
    file_domain: str | None = None

    def guessed(batch: list[tuple[str, dict[str, Any]]]) -> str:
        return guess_domain(c["name"] for _, r in batch for c in r["tool_calls"])

    for where, rec in records:
        if isinstance(rec, RunError):
            _problem(state, TrajectoryFormatError(display, rec.where, rec.message))
        elif file_domain is None and (pending or "domain" not in rec["meta"]):
            pending.append((where, rec))
            if len(pending) == DOMAIN_GUESS_RUNS:
                file_domain = guessed(pending)
                for w, r in pending:
                    r["meta"].setdefault("domain", file_domain)
                    yield w, r
                pending = []
        else:
            if file_domain is not None:
                rec["meta"].setdefault("domain", file_domain)
            yield where, rec
    if pending:
        file_domain = guessed(pending)
        for w, r in pending:
            r["meta"].setdefault("domain", file_domain)
            yield w, r


def iter_runs(
    paths: Iterable[str | Path] | str | Path, *, skip_invalid: bool = False, result: LoadResult | None = None
) -> Iterator[Run]:
    """Yield runs one at a time from files, directories and globs (see `load_runs`); `result` (when given) collects the
    files read and the skipped, ignored and warned-about ones as the load goes, but not the runs."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    state = _LoadState(skip_invalid, result if result is not None else LoadResult())
    for path, explicit in expand_paths(paths, state.result.warnings):
        yield from _load_one(path, explicit, state)


def load_file(path: str | Path, *, skip_invalid: bool = False) -> LoadResult:
    """Load one trajectory file (any supported format)."""
    result = LoadResult()
    state = _LoadState(skip_invalid, result)
    result.runs.extend(_load_one(Path(path), True, state))
    return result


def load_runs(paths: Iterable[str | Path] | str | Path, *, skip_invalid: bool = False) -> LoadResult:
    """Load runs from files, directories (walked for `*.json`/`*.jsonl`) and glob patterns.

    Raises `TrajectoryFormatError` on the first bad file or run, unless `skip_invalid`: then bad runs, and files that
    cannot be read at all, are left out and listed in `LoadResult.skipped`.
    """
    result = LoadResult()
    result.runs.extend(iter_runs(paths, skip_invalid=skip_invalid, result=result))
    return result


def summarize(runs: list[Run]) -> dict[str, Any]:
    """Counts over runs: runs, passed, failed, tasks and tasks with both a pass and a fail.

    Tasks are keyed by (source, domain, task id) so that airline task 2 and retail task 2 stay apart, and so do
    tau-bench and tau2-bench tasks that share an id; the same task in two files of one source is one task.
    """
    outcomes: dict[tuple[str, str, str], set[bool]] = {}
    for r in runs:
        outcomes.setdefault((r.source, str(r.meta.get("domain", "")), r.task_id), set()).add(r.success)
    passed = sum(1 for r in runs if r.success)
    return {
        "runs": len(runs),
        "passed": passed,
        "failed": len(runs) - passed,
        "tasks": len(outcomes),
        "mixed_tasks": sum(1 for v in outcomes.values() if len(v) == 2),
        "sources": dict(Counter(r.source for r in runs)),
    }
