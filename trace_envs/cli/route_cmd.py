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
    method: Annotated[str, typer.Option(help="lexical (naive Bayes over words and word pairs, no model), model (the base model scores labelled options), retrieval (the mined runs nearest by the base model's embedding, the base model scoring what they lacked plus base; the kept adapters with merge weights) or arrow (PEFT's Arrow model over the adapters: routes per token, so it names no adapter here).")] = "lexical",
    model: Annotated[str, typer.Option(help="Base model for --method model: a path, a hub id, smollm2 or tiny.")] = "smollm2",
    json_out: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
) -> None:
    """Print the chosen capability (or none: use the base model) and every candidate's score."""
    from trace_envs.routing import ModelRouter, RetrievalRouter, load_index

    try:
        index = load_index(adapters)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(str(exc)) from None
    if method not in ("lexical", "model", "retrieval", "arrow"):
        raise fail(f"--method must be lexical, model, retrieval or arrow, got {method!r}")
    if method == "arrow":
        trained = [c for c in index.candidates if c.adapter and (Path(c.adapter) / "adapter_config.json").is_file()]
        if not trained:
            raise fail(f"{adapters}: --method arrow needs trained adapters (adapter_config.json), found none")
        from trace_envs.evaluation import PolicyOptions, parse_policy

        try:  # built as the routed policy builds it, so a folder PEFT cannot load fails here
            policy = training_or_fail(stack=True).model_policy(parse_policy(f"routed:{model}+{adapters}"),
                                                               PolicyOptions(routing="arrow"))
        except ValueError as exc:
            raise fail(str(exc)) from None
        names = ", ".join(policy.available)
        print(f"arrow: PEFT's Arrow model over {len(policy.available)} adapters ({names}) routes every token, so no "
              f"task-level choice; play it with `trace-envs eval ENV --policy routed:{model}+{adapters} "
              "--route-method arrow`")
        return
    if method == "lexical":
        router = index.router()
    else:
        try:
            loaded = training_or_fail(stack=True).load_model(model)
        except ValueError as exc:
            raise fail(str(exc)) from None
        if method == "model":
            router = ModelRouter(index.candidates, loaded.model, loaded.tokenizer)
        else:
            router = RetrievalRouter(index.candidates, loaded.model, loaded.tokenizer,
                                     none_examples=list(index.none_examples))
    decision = router.route(text)
    adapter = next((c.adapter for c in index.candidates if c.name == decision.choice), None)
    if json_out:
        print(json.dumps({**decision.model_dump(), "adapter": adapter}, indent=2))
        return
    console = Console()
    console.print(f"choice: {decision.choice or 'none (base model)'}" + (f"  adapter: {adapter}" if adapter else ""))
    if len(decision.weights) > 1:
        console.print("merge: " + " + ".join(f"{w:.2f} x {n}" for n, w in decision.weights.items()))
    table = Table("capability", f"score ({decision.method})")
    for name, score in sorted(decision.scores.items(), key=lambda kv: -kv[1]):
        table.add_row(name, f"{score:.3f}")
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("route")(route)
