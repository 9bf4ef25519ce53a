"""Where the templates and the bundled generated envs live, in a source checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def templates_dir() -> Path:
    bundled = _PACKAGE / "_templates"
    return bundled if bundled.is_dir() else _PACKAGE.parent / "templates"


def bundled_generated_dir() -> Path:
    bundled = _PACKAGE / "_generated"
    return bundled if bundled.is_dir() else _PACKAGE.parent / "generated"
