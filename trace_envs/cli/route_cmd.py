"""`trace-envs route TEXT --adapters DIR`: which capability adapter fits a task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from trace_envs.cli.common import fail, training_or_fail


def route(
    text: Annotated[str, typer.Argument(help="The task's opening: system prompt and/or first user message.")],
    adapters: Annotated[Path, typer.Option("--adapters", "-a", help="Adapters folder (with router.json, or one sub-folder per adapter).")],
    method: Annotated[str, typer.Option(help="lexical (naive Bayes over words and word pairs, no model) or model (the base model scores labelled options).")] = "lexical",
    model: Annotated[str, typer.Option(help="Base model for --method model: a path, a hub id, smollm2 or tiny.")] = "smollm2",
    json_out: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
) -> None:
    """Print the chosen capability (or none: use the base model) and every candidate's score."""
    from trace_envs.routing import ModelRouter, load_index

    try:
        index = load_index(adapters)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(str(exc)) from None
    if method == "lexical":
        router = index.router()
    elif method == "model":
        try:
            loaded = training_or_fail(stack=True).load_model(model)
        except ValueError as exc:
            raise fail(str(exc)) from None
        router = ModelRouter(index.candidates, loaded.model, loaded.tokenizer)
    else:
        raise fail(f"--method must be lexical or model, got {method!r}")
    decision = router.route(text)
    adapter = next((c.adapter for c in index.candidates if c.name == decision.choice), None)
    if json_out:
        print(json.dumps({**decision.model_dump(), "adapter": adapter}, indent=2))
        return
    console = Console()
    console.print(f"choice: {decision.choice or 'none (base model)'}" + (f"  adapter: {adapter}" if adapter else ""))
    table = Table("capability", f"score ({decision.method})")
    for name, score in sorted(decision.scores.items(), key=lambda kv: -kv[1]):
        table.add_row(name, f"{score:.3f}")
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("route")(route)
