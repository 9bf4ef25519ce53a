"""`trace-envs show FILE`: one episode of an `eval --transcripts` file, rendered readably."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trace_envs.cli.common import fail


def show(
    file: Annotated[Path, typer.Argument(help="A transcripts file written by `trace-envs eval ... --transcripts FILE`.")],
    episode: Annotated[int, typer.Option("--episode", "-e", help="Which episode: its line in the file, from 0.")] = 0,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Show the (first) episode of this seed instead.")] = None,
    system: Annotated[bool, typer.Option("--system", help="Include the system prompt (policy and tools).")] = False,
) -> None:
    """Render one episode: each user message, agent message, tool call and result, then every check clause with its
    score and the reason for it."""
    from trace_envs.transcripts import TranscriptError, read_transcripts, render_transcript

    try:
        records = read_transcripts(file)
    except TranscriptError as exc:
        raise fail(str(exc)) from None
    if not records:
        raise fail(f"{file}: no episodes")
    if seed is not None:
        matches = [i for i, r in enumerate(records) if r.get("seed") == seed]
        if not matches:
            seeds = sorted({r.get("seed") for r in records})
            raise fail(f"{file}: no episode with seed {seed}; seeds: {seeds[0]}..{seeds[-1]} ({len(seeds)})")
        episode = matches[0]
    if not 0 <= episode < len(records):
        raise fail(f"{file}: --episode must be in 0..{len(records) - 1}, got {episode}")
    print(f"episode {episode} of {len(records)} in {file}")
    print(render_transcript(records[episode], system=system))


def register(app: typer.Typer) -> None:
    """Add `show` to the CLI."""
    app.command("show")(show)
