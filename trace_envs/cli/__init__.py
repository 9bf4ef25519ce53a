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



def _version(value: bool) -> None:
    if value:
        from trace_envs import __version__

        print(f"trace-envs {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Turn an LLM agent's recurring failures into targeted Gymnasium training environments.

    Pipeline: inspect (read runs) -> mine (find missing capabilities) -> generate (specs to envs) -> check -> train
    (one LoRA adapter per capability) -> eval -> route. `trace-envs run` does all of it; `trace-envs demo` shows it.
    """


# One module per command group; each defines `register(app)`.
COMMAND_MODULES = [
    "trace_envs.cli.inspect_cmd",
    "trace_envs.cli.mine_cmd",
    "trace_envs.cli.diagnose_cmd",
    "trace_envs.cli.envs_cmd",
    "trace_envs.cli.train_cmd",
    "trace_envs.cli.route_cmd",
    "trace_envs.cli.run_cmd",
    "trace_envs.cli.serve_cmd",
    "trace_envs.cli.show_cmd",
]


_loaded = False


def _load_commands() -> None:
    global _loaded
    if not _loaded:
        for name in COMMAND_MODULES:
            importlib.import_module(name).register(app)
        _loaded = True


def main() -> None:
    _load_commands()
    app()
