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
    "Runs of different domains (tau2's domain_name, a JSONL run's `domain` field, else a guess per file from its "
    "tools) are never merged: each domain gets its own block (and with --json its own line: one JSON object per "
    "domain with domain, runs, passed, failed, tasks, mixed_tasks, sources, tools, its files, and the load's skipped "
    "and ignored files).\n\n"
    "Bad input prints one `error: <file>: <where>: <what>` line on stderr and exits with code 2.\n\n"
    "\b\nExamples:\n"
    "  trace-envs inspect ../shared/data/tau-bench/gpt-4o-airline.json\n"
    "  trace-envs inspect ../shared/data/tau2-bench/results --json\n"
    "  trace-envs inspect 'logs/*.jsonl' --skip-invalid --kinds kinds.yaml"
)


def _reports(paths: list[str], skip_invalid: bool, kinds: Optional[Path]) -> list[dict[str, Any]]:
    """One summary per domain found in `paths` (see INSPECT_HELP for the fields)."""
    from trace_envs.trajectories.errors import TrajectoryFormatError
    from trace_envs.trajectories.loaders import load_runs
    from trace_envs.trajectories.profile import OverridesError, load_overrides, split_by_domain

    try:
        overrides = load_overrides(kinds) if kinds is not None else None
        result = load_runs(paths, skip_invalid=skip_invalid)
    except (TrajectoryFormatError, OverridesError) as exc:
        raise fail(str(exc)) from None
    if not result.runs:
        where = ", ".join(paths)
        reason = f" ({len(result.skipped)} skipped: {result.skipped[0]})" if result.skipped else ""
        raise fail(f"{where}: no runs loaded{reason}")
    loaded = {
        "skipped": len(result.skipped),
        "skipped_reasons": result.skipped,
        "ignored_files": result.ignored,
    }
    return [_domain_report(runs, overrides, result.files, loaded) for runs in split_by_domain(result.runs).values()]


def _domain_report(runs: list[Any], overrides: Any, files: list[str], loaded: dict[str, Any]) -> dict[str, Any]:
    """The summary of one domain's `runs`: `files` are every file loaded (the domain's own are kept, in order),
    `loaded` the load's skipped and ignored files."""
    from trace_envs.trajectories.loaders import summarize
    from trace_envs.trajectories.profile import build_profile

    profile = build_profile(runs, overrides)
    summary = summarize(runs)
    own = {r.file for r in runs}
    return {
        "domain": profile.domain,
        **{k: summary[k] for k in ("runs", "passed", "failed", "tasks", "mixed_tasks")},
        "sources": summary["sources"],
        "tools": {
            name: {"calls": t.calls, "kind": t.kind, "kind_source": t.kind_source, "error_rate": t.error_rate}
            for name, t in profile.tools.items()
        },
        "files": [f for f in files if f in own],
        **loaded,
    }


def _print_readable(reports: list[dict[str, Any]]) -> None:
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    first = reports[0]
    files = [f for r in reports for f in r["files"]]
    sources: dict[str, int] = {}
    for r in reports:
        for k, v in r["sources"].items():
            sources[k] = sources.get(k, 0) + v
    console.print(f"files: {len(files)} ({', '.join(f'{k}: {v}' for k, v in sources.items())})")
    for f in files:
        console.print(f"  {f}", markup=False)
    if first["skipped"]:
        console.print(f"skipped: {first['skipped']}")
        for reason in first["skipped_reasons"][:10]:
            console.print(f"  {reason}", markup=False)
        if first["skipped"] > 10:
            console.print(f"  ... and {first['skipped'] - 10} more")
    if first["ignored_files"]:
        console.print(f"ignored (not trajectory files): {len(first['ignored_files'])}")
        for reason in first["ignored_files"]:
            console.print(f"  {reason.split(': ', 1)[0]}", markup=False)
    if len(reports) > 1:
        console.print(f"{len(reports)} domains, each summarized and profiled on its own: "
                      f"{', '.join(r['domain'] for r in reports)}", markup=False)
    for report in reports:
        _print_domain(console, report, several=len(reports) > 1)


def _print_domain(console: Any, report: dict[str, Any], several: bool) -> None:
    from rich.table import Table

    if several:
        console.print("")
        names = ", ".join(Path(f).name for f in report["files"])
        console.print(f"domain: {report['domain']}  ({len(report['files'])} files: {names})", markup=False)
    else:
        console.print(f"domain: {report['domain']}", markup=False)
    console.print(f"runs: {report['runs']}  passed: {report['passed']}  failed: {report['failed']}")
    console.print(f"tasks: {report['tasks']}  mixed outcomes: {report['mixed_tasks']}")
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
        bool, typer.Option("--json", help="Print one JSON object per domain, one per line, instead of the readable "
                           "summary.")
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
    reports = _reports(paths, skip_invalid, kinds)
    if as_json:
        for report in reports:
            typer.echo(json.dumps(report, ensure_ascii=False))
    else:
        _print_readable(reports)


inspect.__doc__ = INSPECT_HELP


def register(app: typer.Typer) -> None:
    """Add `inspect` to the CLI."""
    app.command("inspect", help=INSPECT_HELP, short_help="Summarize agent runs and the tools they used.")(inspect)
