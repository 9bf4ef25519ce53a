"""`trace-envs schema | generate | list | check | play`: the envs side of the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from trace_envs.cli.common import EXIT_BAD_INPUT, fail, output_dir

console = Console()


def schema(out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None) -> None:
    """Print the JSON Schema of a CapabilitySpec (validate your own spec files against it)."""
    from trace_envs.spec.io import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True)
    if out:
        out.write_text(text + "\n")
        console.print(f"wrote {out}")
    else:
        print(text)


def generate(
    specs: Annotated[list[Path], typer.Argument(help="Spec files: one CapabilitySpec or a list of them (e.g. capabilities.json).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to publish envs into, one sub-folder per spec.")] = Path("generated"),
    no_validate: Annotated[bool, typer.Option("--no-validate", help="Publish without the oracle/mutant/baseline checks.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object per spec instead of a table.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Replace an env in OUT of another domain that has the "
                                          "same name (refused without it).")] = False,
) -> None:
    """Render each spec through its family's template, validate the env, and publish it atomically into OUT/<name>/.

    An env is published only if its module compiles and imports, Gymnasium's env checker passes, the oracle scores 1.0
    on 20 seeds, every mutated oracle scores below 1.0, and random and passive policies average below 0.2.
    An env of the same domain in OUT is replaced; one of another domain only with --replace.
    Exit code 1 when any spec failed (the others are still published), 2 for an invalid spec file, an output folder
    that cannot be written, or an env of another domain in the way (nothing is generated then).
    """
    from trace_envs.generate.publish import foreign_env, generate_many, safe_target
    from trace_envs.spec.io import SpecError, load_specs

    loaded = []
    for path in specs:
        try:
            loaded.extend(load_specs(path))
        except SpecError as exc:
            raise fail(str(exc)) from None
    output_dir(out)
    clashes = [] if replace else [(s, d) for s in loaded if (d := foreign_env(s, out)) is not None]
    for spec, domain in clashes:  # one error line each
        fail(f"{safe_target(out, spec.name)} holds the {domain} env {spec.name}; this spec is of domain {spec.domain}: "
             "pass --replace to replace it, or generate into another folder")
    if clashes:
        raise typer.Exit(EXIT_BAD_INPUT)
    with Progress(console=Console(stderr=True), transient=True, disable=json_out) as progress:
        task = progress.add_task(f"generating {len(loaded)} env(s)", total=len(loaded))
        results = generate_many(loaded, out, validate=not no_validate, replace=replace,
                                done=lambda spec, _: progress.advance(task))
    if json_out:
        for r in results:
            print(r.model_dump_json())
    else:
        table = Table("env", "published", "oracle", "worst mutant", "random", "passive", "problem")
        table.columns[0].overflow = "fold"
        for r in results:
            rep = r.report
            worst = max(rep.mutants.values()) if rep and rep.mutants else None
            table.add_row(
                f"trace/{r.name}",
                "yes" if r.published else "NO",
                f"{rep.oracle:.2f}" if rep else "-",
                f"{worst:.2f}" if worst is not None else "-",
                f"{rep.random:.3f}" if rep else "-",
                f"{rep.passive:.3f}" if rep else "-",
                (r.error or "")[:80],
            )
        console.print(table)
        console.print(f"{sum(r.published for r in results)} of {len(results)} published into {out}")
    if not all(r.published for r in results):
        raise typer.Exit(1)


def list_envs(json_out: Annotated[bool, typer.Option("--json", help="Print a JSON list of {id, family, path, description}.")] = False) -> None:
    """List the registered trace/<name> envs (bundled, ./generated, and TRACE_ENVS_PATH folders)."""
    from trace_envs.registry import registered

    rows = []
    for env_id, module in sorted(registered().items()):
        spec_file = module.parent / "spec.json"
        try:
            spec = json.loads(spec_file.read_text())
        except (OSError, ValueError):
            spec = {}
        rows.append(
            {
                "id": env_id,
                "family": spec.get("family", "?"),
                "path": str(module.parent),
                "description": spec.get("description", ""),
                "spec_hash": spec.get("spec_hash"),
            }
        )
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    _print_env_table(rows, Console())


# A table's frame and cell padding: 3 columns take 4 borders and 6 spaces, 2 columns 3 and 4.
_FRAME = {3: 10, 2: 7}
MIN_DESCRIPTION = 24


def _print_env_table(rows: list[dict], out: Console) -> None:
    """Ids and families are never cut: the description column takes what width is left, and is dropped when less
    than MIN_DESCRIPTION columns are; narrower than ids and families, the rows are plain `id  family` lines."""
    id_w = max((len(r["id"]) for r in rows), default=2)
    fam_w = max((len(r["family"]) for r in rows), default=6)
    if out.width < id_w + fam_w + _FRAME[2]:
        for row in rows:
            out.print(f"{row['id']}  {row['family']}", markup=False, highlight=False, soft_wrap=True)
        return
    table = Table()
    table.add_column("id", no_wrap=True, min_width=id_w)
    table.add_column("family", no_wrap=True, min_width=fam_w)
    describe = out.width - id_w - fam_w - _FRAME[3] >= MIN_DESCRIPTION
    if describe:
        table.add_column("description", ratio=1)
    for row in rows:
        table.add_row(row["id"], row["family"], *([_brief(row["description"])] if describe else []))
    out.print(table)


def _brief(text: str, limit: int = 90) -> str:
    """The description's first `limit` characters, cut at a word and marked when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit + 1].rsplit(" ", 1)[0].rstrip(",;:") + " ..."


def _resolve_env_class(env: str):
    from trace_envs.cli.common import resolve_env
    from trace_envs.registry import load_env_class, registered
    from trace_envs.spec.io import SpecError

    env_id = resolve_env(env)
    found = registered()
    if env_id not in found:  # a Gymnasium env that is not a trace-envs one (CartPole-v1)
        raise fail(f"{env_id} is not a trace-envs env; registered: trace-envs list")
    try:
        return load_env_class(str(found[env_id]))
    except SpecError as exc:  # its spec.json, edited or damaged since it was generated
        raise fail(str(exc)) from None


def check(
    env: Annotated[str, typer.Argument(help="Env id (trace/<name>) or name.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    seeds: Annotated[int, typer.Option(help="Oracle, mutant and agent seeds (random and passive use at least 50, the probes 20).")] = 20,
    agent: Annotated[Optional[list[Path]], typer.Option(
        "--agent", help="A Python file defining make_policy() -> (env, rng, turn) -> action: an agent written from "
        "the domain's policy, which must score 1.0 on every seed (e.g. examples/policy_agents/airline.py). "
        "Repeatable. It is your own code and runs as such.")] = None,
) -> None:
    """Validate a registered env as `generate` does before publishing: the oracle and the oracle announcing every
    step first score 1.0, every mutant less, random and passive below 0.2, every exploit probe within its bound (the
    clause that paid it is named), scenario classes balanced, Gymnasium's env checker; plus any --agent."""
    from trace_envs.generate.validate import report_dict, validate_env

    agents = {path.stem: _load_agent(path) for path in agent or []}
    report = validate_env(_resolve_env_class(env), oracle_seeds=seeds, baseline_seeds=max(50, seeds),
                          extra_agents=agents)
    if json_out:
        print(json.dumps(report_dict(report), indent=2))
    else:
        table = Table("measure", "value", "bound", "paid by")
        table.add_row("oracle (lowest)", f"{report.oracle:.3f}", "= 1.0", "")
        table.add_row("oracle announcing each step (lowest)", f"{report.chatty_oracle:.3f}", "= 1.0", "")
        if report.unconfirmed_oracle is not None:
            table.add_row("oracle without its confirmation questions (highest)", f"{report.unconfirmed_oracle:.3f}",
                          "< 1.0", "")
        for name, value in report.mutants.items():
            table.add_row(f"mutant {name} (highest)", f"{value:.3f}", "< 1.0", "")
        if report.argument_mutants:
            worst, value = max(report.argument_mutants.items(), key=lambda kv: kv[1])
            table.add_row(f"{len(report.argument_mutants)} wrong-argument mutants (highest: {worst})", f"{value:.3f}",
                          "< 1.0", "")
        table.add_row("random (mean)", f"{report.random:.3f}", "< 0.2", "")
        table.add_row("passive (mean)", f"{report.passive:.3f}", "< 0.2", "")
        for name, probe in report.probes.items():
            value = probe.mean if probe.kind == "content_free" else probe.success
            what = "mean" if probe.kind == "content_free" else "success"
            paid = ", ".join(f"{k} {v:.2f}" for k, v in probe.paid.items())
            table.add_row(f"probe {name} ({what})", f"{value:.3f}", probe.bound.split(" ", 1)[-1], paid)
        table.add_row("scenario classes", ", ".join(f"{k} {v:.2f}" for k, v in report.classes.items()), "<= 0.6", "")
        for name, value in report.agents.items():
            table.add_row(f"agent {name} (lowest)", f"{value:.3f}", "= 1.0", "")
        table.add_row("env checker", report.env_checker, "passed", "")
        console.print(table)
        console.print("OK" if report.ok else "FAILED: " + "; ".join(report.problems))
    if not report.ok:
        raise typer.Exit(1)


def _load_agent(path: Path):
    """`make_policy()` from a user's own agent file (their code, loaded as a module, like a plugin)."""
    import importlib.util
    import sys

    if not path.is_file():
        raise fail(f"{path}: no such agent file")
    name = f"trace_envs_agent_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise fail(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "make_policy", None)):
        raise fail(f"{path}: defines no make_policy() returning a policy (env, rng, turn) -> action")
    return module.make_policy()


def play(
    env: Annotated[str, typer.Argument(help="Env id (trace/<name>) or name.")],
    seed: Annotated[int, typer.Option(help="Scenario seed.")] = 0,
) -> None:
    """Play the agent's side in the terminal: type a message, or a tool call as JSON {"name": ..., "arguments": {...}}.

    At the end it prints the reward, its per-clause breakdown, and why each clause below 1.0 scored what it did; when
    the input ends (or `/quit`) before the episode does, the score the check gives the episode so far.
    Piped input (`trace-envs play ENV < actions.txt`) is echoed after each `agent>` prompt, so the output reads as the
    conversation.

    Type `/oracle` to see the oracle's actions, `/tools` for the tool schemas, `/quit` to stop.
    """
    import sys

    cls = _resolve_env_class(env)
    e = cls()
    obs, info = e.reset(seed=seed)
    # A terminal echoes what is typed after the prompt; a pipe does not, and the transcript would lose the agent's side.
    echo = not sys.stdin.isatty()
    console.print(f"[bold]system[/bold]\n{info['system_prompt']}\n")
    console.print(f"[bold]user[/bold]: {obs}")
    while True:
        try:
            action = input("agent> ")
        except EOFError:
            if echo:
                print()  # end the prompt's line
            break
        if echo:
            print(action, flush=True)
        if action.strip() == "/quit":
            break
        if action.strip() == "/oracle":
            console.print("\n".join(e.oracle_actions()))
            continue
        if action.strip() == "/tools":
            console.print_json(json.dumps(info["tools"]))
            continue
        obs, reward, terminated, truncated, info = e.step(action)
        console.print(f"[bold]env[/bold]: {obs}")
        if terminated or truncated:
            console.print(f"episode over: reward {reward:.3f}  breakdown {info.get('reward_breakdown')}", soft_wrap=True)
            _print_shortfalls(e.score())
            return
    result = e.score()
    console.print(f"episode not over: score so far {result.score:.3f}  breakdown {result.breakdown}", soft_wrap=True)
    _print_shortfalls(result)


def _print_shortfalls(result) -> None:
    """Why each clause below 1.0 scored what it did: one greppable line per clause."""
    for clause_id, value in result.breakdown.items():
        if value < 1.0:
            line = f"  {clause_id} ({value:.2f}): {result.reasons.get(clause_id, '')}"
            console.print(line, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)
    app.command("generate")(generate)
    app.command("list")(list_envs)
    app.command("check")(check)
    app.command("play")(play)
