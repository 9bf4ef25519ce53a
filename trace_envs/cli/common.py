"""Helpers shared by CLI commands: one clear error line and exit code 2 for bad input."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

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


def output_dir(path: Path, option: str = "--out") -> Path:
    """Check that `path` can be an output folder: a folder that takes new entries, or a missing one whose nearest
    existing parent does (it is made when the outputs are written, so a run that fails leaves nothing). Otherwise one
    `error:` line (exit 2) names it and why not: a file, a dangling symbolic link, a place no folder can be made
    (under /proc), a folder that refuses writes (immutable, read-only). Checked before any work is done."""
    from trace_envs.atomic import check_writable

    if path.is_symlink() and not path.exists():
        raise fail(f"{option} {path}: a symbolic link to {os.readlink(path)}, which does not exist")
    folder = next(p for p in [path, *path.absolute().parents] if p.exists())  # "/" at last
    if not folder.is_dir():
        raise fail(f"{option} {path}: " + ("exists and is not a folder" if folder == path else f"{folder} is not a folder"))
    try:
        check_writable(folder)
    except OSError as exc:
        what = "cannot write in the folder" if folder == path else f"cannot create the folder in {folder}"
        raise fail(f"{option} {path}: {what}: {exc.strerror}") from None
    return path


def option_help(model: Any, name: str, default: Any = None) -> str:
    """A flag's help from the option model's field: its description and its default (`default` when the command
    layers a preset over the model's own), so the text and the value are written once, in the model."""
    info = model.model_fields[name]
    value = info.get_default(call_default_factory=True) if default is None else default
    return f"{info.description.rstrip('.')} (default {value})."


def one_line(exc: Exception) -> str:
    """A pydantic ValidationError as one line, `field.path: message; ...`; any other error as its text."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in errors())


def training_or_fail(stack: bool = False) -> Any:
    """The training package, through its seam (`trace_envs.training`), or one `error:` line (exit 2) saying what to
    install; `stack`: the training stack (torch, transformers, trl, peft) must be there too."""
    from trace_envs.training import TrainingUnavailable, training

    try:
        impl = training()
        if stack:
            impl.require_stack()
    except TrainingUnavailable as exc:
        raise fail(str(exc)) from None
    return impl
