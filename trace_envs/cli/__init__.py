"""The `trace-envs` command line. Each command lives in its own module under `trace_envs.cli`."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="trace-envs",
    help="Turn an LLM agent's recurring failures into targeted Gymnasium training environments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One module per command group; each defines `register(app)`.
COMMAND_MODULES = [
    "trace_envs.cli.inspect_cmd",
]


def _load_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


def main() -> None:
    _load_commands()
    app()
