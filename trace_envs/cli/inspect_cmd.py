"""`trace-envs inspect`: load agent runs and summarize them (outcomes, tasks, the tools the agent used)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from trace_envs.cli.common import fail

INSPECT_HELP = (
    "Load agent runs and summarize them: runs, passed / failed, tasks, tasks with mixed outcomes, and every tool "
    "the agent called with its call count and kind (read / write / other).\n\n"
    "FILE_OR_DIR are files, directories (walked for *.json and *.jsonl) or glob patterns. The format is detected "
    "from the content: tau-bench trajectories, tau2-bench results, OpenAI-messages JSONL.\n\n"
    "Bad input prints one `error: <file>: <where>: <what>` line on stderr and exits with code 2.\n\n"
    "\b\nExamples:\n"
    "  trace-envs inspect ../shared/data/tau-bench/gpt-4o-airline.json\n"
    "  trace-envs inspect ../shared/data/tau2-bench/results --json\n"
    "  trace-envs inspect 'logs/*.jsonl' --skip-invalid --kinds kinds.yaml"
)


def _report(paths: list[str], skip_invalid: bool, kinds: Optional[Path]) -> dict[str, Any]:
    from trace_envs.trajectories.errors import TrajectoryFormatError
    from trace_envs.trajectories.loaders import load_runs, summarize
    from trace_envs.trajectories.profile import OverridesError, build_profile, load_overrides

    try:
        overrides = load_overrides(kinds) if kinds is not None else None
        result = load_runs(paths, skip_invalid=skip_invalid)
    except (TrajectoryFormatError, OverridesError) as exc:
        raise fail(str(exc)) from None
    if not result.runs:
        where = ", ".join(paths)
        reason = f" ({len(result.skipped)} skipped: {result.skipped[0]})" if result.skipped else ""
        raise fail(f"{where}: no runs loaded{reason}")
    profile = build_profile(result.runs, overrides)
    summary = summarize(result.runs)
    return {
        **{k: summary[k] for k in ("runs", "passed", "failed", "tasks", "mixed_tasks")},
        "domain": profile.domain,
        "sources": summary["sources"],
        "tools": {
            name: {"calls": t.calls, "kind": t.kind, "kind_source": t.kind_source, "error_rate": t.error_rate}
            for name, t in profile.tools.items()
        },
        "skipped": len(result.skipped),
        "skipped_reasons": result.skipped,
        "files": result.files,
        "ignored_files": result.ignored,
    }


def _print_readable(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    sources = ", ".join(f"{k}: {v}" for k, v in report["sources"].items())
    console.print(f"files: {len(report['files'])} ({sources})")
    for f in report["files"]:
        console.print(f"  {f}", markup=False)
    console.print(f"domain: {report['domain']}", markup=False)
    console.print(f"runs: {report['runs']}  passed: {report['passed']}  failed: {report['failed']}")
    console.print(f"tasks: {report['tasks']}  mixed outcomes: {report['mixed_tasks']}")
    if report["skipped"]:
        console.print(f"skipped: {report['skipped']}")
        for reason in report["skipped_reasons"][:10]:
            console.print(f"  {reason}", markup=False)
        if report["skipped"] > 10:
            console.print(f"  ... and {report['skipped'] - 10} more")
    if report["ignored_files"]:
        console.print(f"ignored (not trajectory files): {len(report['ignored_files'])}")
        for reason in report["ignored_files"]:
            console.print(f"  {reason.split(': ', 1)[0]}", markup=False)
    table = Table(title="tools the agent called", title_justify="left")
    table.add_column("tool")
    table.add_column("calls", justify="right")
    table.add_column("kind")
    table.add_column("from")
    table.add_column("errors", justify="right")
    for name, t in report["tools"].items():
        table.add_row(name, str(t["calls"]), t["kind"], t["kind_source"], f"{t['error_rate']:.0%}")
    console.print(table)


def inspect(
    paths: Annotated[
        list[str], typer.Argument(metavar="FILE_OR_DIR...", help="Trajectory files, directories or glob patterns.")
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of the readable summary.")
    ] = False,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Skip bad runs (and unreadable files) and report how many.")
    ] = False,
    kinds: Annotated[
        Optional[Path],
        typer.Option(
            "--kinds",
            metavar="OVERRIDES_FILE",
            help='JSON or YAML file {"tool_name": "read"|"write"|"other"} overriding the inferred tool kinds.',
        ),
    ] = None,
) -> None:
    report = _report(paths, skip_invalid, kinds)
    if as_json:
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print_readable(report)


inspect.__doc__ = INSPECT_HELP


def register(app: typer.Typer) -> None:
    """Add `inspect` to the CLI."""
    app.command("inspect", help=INSPECT_HELP, short_help="Summarize agent runs and the tools they used.")(inspect)
