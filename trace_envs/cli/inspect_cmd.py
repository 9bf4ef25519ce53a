"""`trace-envs inspect`: load agent runs and summarize them (outcomes, tasks, the tools the agent used)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from trace_envs.cli.common import fail

INSPECT_HELP = (
    "Load agent runs and summarize them: runs, passed / failed, tasks, tasks with mixed outcomes, and every tool "
    "the agent called with its call count, kind (read / write / other; a hand-off to a person is marked) and where "
    "the kind came from (its definition, the runs, an override), and its error share (a reply is an error when the "
    "source flags it or its text is one: a JSON error envelope, an exception line, `Error: ...`, `ERROR 409: ...`).\n\n"
    "FILE_OR_DIR are files, directories (walked for *.json and *.jsonl) or glob patterns. The format is detected "
    "from the content, never the name: tau-bench trajectories, tau2-bench results (wrapped or a bare list of "
    "simulations), OpenAI-messages JSONL, ToolSandbox run folders (passed = similarity 1.0, ToolSandbox's "
    "\"perfect\"), and any format registered in Python (see examples/custom_format.py). FIFOs, sockets and devices "
    "found in a directory are skipped with a warning, never opened. Runs stream through: a large JSONL is counted "
    "in bounded memory (tool kinds come from the first 2000 runs of each domain, every count from all of them).\n\n"
    "Runs of different domains (tau2's domain_name, a JSONL run's `domain` field, else a guess per file from its "
    "tools) are never merged: each domain gets its own block (and with --json its own line: one JSON object per "
    "domain with domain, runs, passed, failed, tasks, mixed_tasks, sources, tools, its files, and the load's skipped "
    "and ignored files and warnings).\n\n"
    "Expected actions are checked against the runs: a tau2 file whose simulations were graded on other tasks' actions "
    "than their task_id names (reward_info.action_checks), or a file whose passed runs do not make their expected "
    "actions on most tasks, gets a warning naming the file and the share affected (data_warnings in --json).\n\n"
    "Bad input prints one `error: <file>: <where>: <what>` line on stderr and exits with code 2.\n\n"
    "\b\nExamples:\n"
    "  trace-envs inspect ../shared/data/tau-bench/gpt-4o-airline.json\n"
    "  trace-envs inspect ../shared/data/tau2-bench/results --json\n"
    "  trace-envs inspect 'logs/*.jsonl' --skip-invalid --kinds kinds.yaml"
)


PROFILE_SAMPLE = 2000
"""Runs per domain that `inspect` profiles in full (tool kinds); every count it prints is exact over all runs."""


class _DomainTally:
    """One domain's exact counts, kept as runs stream past, and the first PROFILE_SAMPLE runs for the profile."""

    def __init__(self) -> None:
        self.runs = 0
        self.passed = 0
        self.sources: dict[str, int] = {}
        self.outcomes: dict[tuple[str, str, str], int] = {}  # bit 1: a pass, bit 2: a fail
        self.calls: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.files: set[str | None] = set()
        self.sample: list[Any] = []

    def add(self, run: Any) -> None:
        self.runs += 1
        self.passed += run.success
        self.sources[run.source] = self.sources.get(run.source, 0) + 1
        key = (run.source, str(run.meta.get("domain", "")), run.task_id)
        self.outcomes[key] = self.outcomes.get(key, 0) | (1 if run.success else 2)
        for c in run.agent_calls:
            self.calls[c.name] = self.calls.get(c.name, 0) + 1
            self.errors[c.name] = self.errors.get(c.name, 0) + c.error
        self.files.add(run.file)
        if len(self.sample) < PROFILE_SAMPLE:
            self.sample.append(run)


def _reports(paths: list[str], skip_invalid: bool, kinds: Optional[Path]) -> list[dict[str, Any]]:
    """One summary per domain found in `paths` (see INSPECT_HELP for the fields). Runs stream through: memory grows
    with the number of domains, tasks and tools, not of runs."""
    from trace_envs.trajectories.errors import TrajectoryFormatError
    from trace_envs.trajectories.loaders import LoadResult, iter_runs
    from trace_envs.trajectories.profile import OverridesError, load_overrides, run_domain
    from trace_envs.trajectories.trust import TrustAudit

    result = LoadResult()
    tallies: dict[str, _DomainTally] = {}
    trust = TrustAudit()
    try:
        overrides = load_overrides(kinds) if kinds is not None else None
        for run in iter_runs(paths, skip_invalid=skip_invalid, result=result):
            tally = tallies.get(run_domain(run))
            if tally is None:
                tally = tallies[run_domain(run)] = _DomainTally()
            tally.add(run)
            trust.add(run)
    except (TrajectoryFormatError, OverridesError) as exc:
        raise fail(str(exc)) from None
    if not tallies:
        where = ", ".join(paths)
        reason = f" ({len(result.skipped)} skipped: {result.skipped[0]})" if result.skipped else ""
        raise fail(f"{where}: no runs loaded{reason}")
    loaded = {
        "skipped": len(result.skipped),
        "skipped_reasons": result.skipped,
        "ignored_files": result.ignored,
        "warnings": result.warnings,
    }
    findings = trust.findings()
    return [_domain_report(tallies[d], overrides, result.files, loaded,
                           [f.message for f in findings if f.file in tallies[d].files]) for d in sorted(tallies)]


def _domain_report(tally: _DomainTally, overrides: Any, files: list[str], loaded: dict[str, Any],
                   data_warnings: list[str]) -> dict[str, Any]:
    """The summary of one domain: `files` are every file loaded (the domain's own are kept, in order), `loaded` the
    load's skipped and ignored files, `data_warnings` what does not check out in the domain's files."""
    from trace_envs.trajectories.profile import build_profile, infer_kind_from_name

    profile = build_profile(tally.sample, overrides)
    tools = {}
    for name in sorted(tally.calls, key=lambda n: (-tally.calls[n], n)):
        t = profile.tools.get(name)
        kind, source, why = (t.kind, t.kind_source, t.kind_evidence) if t else (
            infer_kind_from_name(name) or "other", "inferred", "its name (not in the profiled sample)")
        calls = tally.calls[name]
        tools[name] = {"calls": calls, "kind": kind, "kind_source": source, "kind_evidence": why,
                       "handoff": name in profile.handoffs, "error_rate": round(tally.errors[name] / calls, 4)}
    return {
        "domain": profile.domain,
        "runs": tally.runs,
        "passed": tally.passed,
        "failed": tally.runs - tally.passed,
        "tasks": len(tally.outcomes),
        "mixed_tasks": sum(1 for v in tally.outcomes.values() if v == 3),
        "sources": tally.sources,
        "tools": tools,
        "files": [f for f in files if f in tally.files],
        **loaded,
        "data_warnings": data_warnings,
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
    for report in reports:
        for line in report["data_warnings"]:
            console.print(f"warning: {line}", markup=False)


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
        table.add_row(name, str(t["calls"]), t["kind"] + (" (hand-off)" if t["handoff"] else ""), t["kind_source"],
                      f"{t['error_rate']:.0%}")
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
