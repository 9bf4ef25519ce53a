"""`trace-envs diagnose`: where runs depart from the actions their source expects, and of what kind."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from trace_envs.cli.common import fail

DIAGNOSE_HELP = (
    "Attribute each failed run's failure: diff its successful writes against the expected actions its source carries "
    "(tau-bench info.task.actions, tau2 evaluation_criteria.actions, including the user's own actions) and type each "
    "departure: an expected write never made (and what the agent did instead), the right tool with a wrong number, "
    "another listed option, an invented value or a value the user stated against the records, a write the ground "
    "truth does not make, a transfer made or withheld, a user-side action never performed, or writes that match (the "
    "failure is in what was said).\n\n"
    "Expected actions are trusted only as far as the runs bear them out: a tau2 simulation graded on another task's "
    "actions than its task_id names is read as the task it was graded on, and a file whose passed runs do not make "
    "their expected actions on most tasks has them set aside; each prints a warning naming the file and the share.\n\n"
    "Without --run: the table of departure kinds per domain (runs, share of the failed runs, tools). With --run ID: "
    "that run's departures, the expected call and the agent's call side by side, with where the values were.\n\n"
    "\b\nExamples:\n"
    "  trace-envs diagnose ../shared/data/tau-bench/gpt-4o-airline.json\n"
    "  trace-envs diagnose ../shared/data/tau-bench/gpt-4o-airline.json --run gpt-4o-airline/7/0\n"
    "  trace-envs diagnose runs/ --json"
)


def diagnose(
    paths: Annotated[list[str], typer.Argument(metavar="RUNS...", help="Run files, directories or glob patterns.")],
    run: Annotated[Optional[str], typer.Option("--run", metavar="ID", help="Print this run's attribution (its run "
                                               "id as `inspect` and the mining report name it).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip runs that do not parse.")] = False,
) -> None:
    """Say why each failed run failed."""
    from trace_envs.checks.attribution import attribute, departure_table
    from trace_envs.trajectories.errors import TrajectoryFormatError
    from trace_envs.trajectories.loaders import load_runs
    from trace_envs.trajectories.profile import build_profile, split_by_domain
    from trace_envs.trajectories.trust import audit, set_aside

    try:
        loaded = load_runs(paths, skip_invalid=skip_invalid)
    except (TrajectoryFormatError, ValueError) as exc:
        raise fail(str(exc)) from None
    if not loaded.runs:
        raise fail(f"{', '.join(paths)}: no runs loaded")
    findings = audit(loaded.runs)
    for f in findings:
        print(f"warning: {f.message}", file=sys.stderr if as_json else sys.stdout)
    groups = split_by_domain(set_aside(loaded.runs, findings))
    if run is not None:
        for runs in groups.values():
            match = next((r for r in runs if r.run_id == run), None)
            if match is not None:
                kinds = build_profile(runs).kinds
                _print_run(match, attribute(match, kinds), as_json)
                return
        near = [r.run_id for rs in groups.values() for r in rs if r.run_id.startswith(run.rsplit("/", 1)[0])][:5]
        raise fail(f"--run {run}: no such run in {', '.join(paths)}" + (f"; runs of that task: {', '.join(near)}"
                                                                          if near else ""))
    out = {}
    for name, runs in groups.items():
        kinds = build_profile(runs).kinds
        atts = [a for a in (attribute(r, kinds) for r in runs) if a is not None]
        files = {r.file for r in runs}
        out[name] = {"runs": len(runs), "with_expected_actions": len(atts),
                     "failed": sum(not a.success for a in atts), "table": departure_table(atts),
                     "data_warnings": [f.message for f in findings if f.file in files]}
    if as_json:
        print(json.dumps(out, indent=2))
        return
    for name, doc in out.items():
        print(f"{name}: {doc['runs']} runs, {doc['with_expected_actions']} with expected actions, "
              f"{doc['failed']} of them failed")
        if not doc["with_expected_actions"]:
            print("  no run carries expected actions: nothing to attribute")
            continue
        print(f"  {'departure':<22}{'runs':>6}{'share':>8}  tools")
        for row in doc["table"]:
            tools = ", ".join(f"{t} {n}" for t, n in list(row["tools"].items())[:4]) or "-"
            print(f"  {row['kind']:<22}{row['runs']:>6}{row['share']:>8.2f}  {tools}")


def _print_run(run, attribution, as_json: bool) -> None:
    if as_json:
        print(json.dumps(attribution.model_dump(mode="json") if attribution else None, indent=2))
        return
    print(f"{run.run_id} (task {run.task_id}): {'passed' if run.success else 'failed'}, reward {run.reward:g}")
    if attribution is None:
        print("  the source carries no expected actions for this run: nothing to attribute")
        return
    if not attribution.departures:
        print("  its writes match the expected actions")
        return
    for d in attribution.departures:
        where = (d.tool or "") + (f".{d.arg}" if d.arg else "")
        print(f"- {d.kind}" + (f" {where}" if where else "") + (f" (instead: {d.instead})" if d.instead else ""))
        if d.expected is not None:
            print(f"    expected: {_call(d.expected)}")
        if d.actual is not None:
            print(f"    agent:    {_call(d.actual)}")
        if d.evidence:
            print(f"    why:      {d.evidence}")


def _call(call: dict) -> str:
    args = json.dumps(call.get("arguments", {}), ensure_ascii=False, sort_keys=True)
    return f"{call['name']}({args if len(args) <= 400 else args[:397] + '...'})"


def register(app: typer.Typer) -> None:
    """Add `diagnose` to the CLI."""
    app.command("diagnose", help=DIAGNOSE_HELP, short_help="Say why each failed run failed.")(diagnose)
