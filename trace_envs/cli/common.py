"""Helpers shared by CLI commands: one clear error line and exit code 2 for bad input."""

from __future__ import annotations

import sys

import typer

EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> "typer.Exit":
    """Print `error: <message>` on stderr and return the Exit to raise."""
    print(f"error: {message}", file=sys.stderr)
    return typer.Exit(code)


def resolve_env(env: str) -> str:
    """The registered id for what the user typed (`trace/<name>` or `<name>`), or one `error:` line (exit 2) naming
    the folders it looked in and how to add one."""
    import gymnasium as gym

    import trace_envs  # noqa: F401
    from trace_envs.registry import resolve_env_id

    try:
        return resolve_env_id(env)
    except gym.error.NameNotFound as exc:
        raise fail(str(exc)) from None
