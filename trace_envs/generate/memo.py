"""Validation reports kept by what they validated, so one env validated twice by the same code is validated once.

The miner's publish check and `generate` validate a spec the same way, so a user who mines and then generates waits
twice for the same report, and a test suite that mines the same logs in many tests waits many times. With
`TRACE_ENVS_VALIDATION_CACHE` set to a folder, each report is stored there as JSON under a key of everything it
depends on: the env's module as rendered (the spec and the template's code), the validation sizes, the source of the
`trace_envs` package and of the env class's own modules, and the versions of Python, Gymnasium and NumPy. A change
to any of them is a new key, so a stored report is the one a fresh validation gives (validation is seeded and
deterministic). Off by default: without the variable every report is computed.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import gymnasium
import numpy

import trace_envs
from trace_envs.atomic import write_text_atomic
from trace_envs.generate.validate import CheckReport

ENV_VAR = "TRACE_ENVS_VALIDATION_CACHE"


def validated(cls: type, module_source: str, kwargs: dict[str, Any], run: Callable[[], CheckReport]) -> CheckReport:
    """`run()`, or the report it gave before for this module, these sizes and this code."""
    folder = os.environ.get(ENV_VAR)
    if not folder:
        return run()
    path = Path(folder) / f"{_key(cls, module_source, kwargs)}.json"
    try:
        return CheckReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not stored yet, or a damaged file: validate again
        pass
    report = run()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(_dump(report)))
    except OSError:  # a read-only or full cache folder costs the reuse, not the report
        pass
    return report


@contextmanager
def kept_in(folder: Path) -> Iterator[None]:
    """Reports kept in `folder` within the block (`trace-envs run` validates each spec in mine, generate and check),
    unless the variable already names a folder of the user's."""
    if os.environ.get(ENV_VAR):
        yield
        return
    os.environ[ENV_VAR] = str(folder)
    try:
        yield
    finally:
        os.environ.pop(ENV_VAR, None)


def _dump(report: CheckReport) -> dict[str, Any]:
    data = report.model_dump(mode="json")
    for name, probe in report.probes.items():  # excluded from a plain dump; kept so the stored report is whole
        data["probes"][name]["rewards"] = list(probe.rewards)
    return data


def _key(cls: type, module_source: str, kwargs: dict[str, Any]) -> str:
    own = sorted({inspect.getsourcefile(k) or "" for k in cls.__mro__[1:] if k.__module__ not in ("builtins", "typing")
                  and not k.__module__.startswith("gymnasium")} - {""})
    h = hashlib.sha256()
    for part in (module_source, json.dumps(kwargs, sort_keys=True), _library(), *(_file(p) for p in own)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@cache
def _library() -> str:
    """The digest of the trace_envs package's source, with the versions of what validation runs on."""
    h = hashlib.sha256(f"{sys.version}|{gymnasium.__version__}|{numpy.__version__}".encode())
    root = Path(trace_envs.__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@cache
def _file(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return path
