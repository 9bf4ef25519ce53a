"""What several test files need and takes seconds to build (a 2,000-run planted mining, the validation report of an
example env), built once per test run and shared by every pytest-xdist worker.

Each xdist worker is its own pytest session, so a session fixture alone would build the value once per worker. The
first worker to ask builds it and pickles it into the run's temporary root (shared by the workers of one run, fresh for
every run, so a value never outlives the code that built it); the others wait on a file lock and read it. Without
xdist the run's own temporary folder holds it.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any, Callable

import pytest
from filelock import FileLock


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this run shares: the parent of a worker's base temp under xdist (the controller made
    it for this run), else the base temp itself (its parent holds the earlier runs)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


class Shared:
    """Values keyed by a name, built at most once per run across the workers and once per process."""

    def __init__(self, factory: pytest.TempPathFactory):
        self.root = run_root(factory) / "shared"
        self.root.mkdir(exist_ok=True)
        self._here: dict[str, Any] = {}

    def folder(self, key: str) -> Path:
        """A folder for files that a value's build writes (published envs), the same for every worker."""
        return self.root / _slug(key)

    def get(self, key: str, build: Callable[[], Any]) -> Any:
        if key in self._here:
            return self._here[key]
        path = self.root / f"{_slug(key)}.pickle"
        with FileLock(str(path) + ".lock"):
            if path.is_file():
                value = pickle.loads(path.read_bytes())
            else:
                value = build()
                tmp = path.with_suffix(".tmp")
                tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                tmp.replace(path)
        self._here[key] = value
        return value


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", key)
