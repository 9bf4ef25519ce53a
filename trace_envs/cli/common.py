"""Helpers shared by CLI commands: one clear error line and exit code 2 for bad input."""

from __future__ import annotations

import sys

import typer

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> "typer.Exit":
    """Print `error: <message>` on stderr and return the Exit to raise."""
    print(f"error: {message}", file=sys.stderr)
    return typer.Exit(code)
