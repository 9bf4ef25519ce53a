"""`trace-envs mine`: find the capabilities an agent lacks by contrasting its passed and failed runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from trace_envs.cli.common import fail, one_line, option_help, output_dir
from trace_envs.mining.options import MineOptions

MINE_HELP = (
    "Contrast passed and failed runs, propose candidate capabilities, label every (run, candidate) pair PRESENT / "
    "LACKING / NA, and keep the candidates with Cov >= rho and Delta >= delta whose contrast holds in at least K of N "
    "bootstrap resamples.\n\n"
    "Writes OUT/capabilities.json (kept CapabilitySpecs with evidence), OUT/candidates.json (every candidate with its "
    "statistics and why it was or was not kept), OUT/report.md and OUT/report.png, each atomically.\n\n"
    "The offline proposer (no LLM, deterministic) is the default. --llm PROVIDER:MODEL adds LLM proposals "
    "(openai, anthropic, or an OpenAI-compatible server with --base-url); replies are cached under --cache-dir.\n\n"
    "Runs of several domains (say a tau2 results folder with airline and retail) are never merged: each domain is "
    "mined on its own, from its own tools and policy, into OUT/<domain>/; --domain NAME mines only that domain, "
    "into OUT/; --pool contrasts them together (each candidate still one domain's), into OUT/.\n\n"
    "Where the runs carry expected actions, each failed run's departures from them are attributed first (see "
    "`trace-envs diagnose`), every family labels from the departures of its kind, and report.md says which kept "
    "capability teaches each kind of failure. Expected actions are trusted only as far as the runs bear them out (see "
    "`trace-envs diagnose`): what does not check out is printed as a warning naming the file and the share.\n\n"
    "\b\nExamples:\n"
    "  trace-envs mine ../shared/data/tau-bench/gpt-4o-airline.json -o out/\n"
    "  trace-envs mine ../shared/data/tau2-bench/results/*airline*.json -o out/airline --k 7\n"
    "  trace-envs mine runs.jsonl -o out/ --llm openai:gpt-4o-mini"
)


def mine(
    paths: Annotated[list[str], typer.Argument(metavar="RUNS...", help="Run files, directories or glob patterns.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("out"),
    offline: Annotated[bool, typer.Option("--offline", help="Offline proposer only (the default without --llm).")] = False,
    llm: Annotated[Optional[str], typer.Option("--llm", metavar="PROVIDER:MODEL", help="LLM proposer and labeler.")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible server URL.")] = None,
    rho: Annotated[Optional[float], typer.Option("--rho", help=option_help(MineOptions, "rho"))] = None,
    delta: Annotated[Optional[float], typer.Option("--delta", help=option_help(MineOptions, "delta"))] = None,
    k: Annotated[Optional[int], typer.Option("--k", help=option_help(MineOptions, "k"))] = None,
    n: Annotated[Optional[int], typer.Option("--n", help=option_help(MineOptions, "n"))] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help=option_help(MineOptions, "seed"))] = None,
    max_candidates: Annotated[Optional[int], typer.Option("--max-candidates",
                                                          help=option_help(MineOptions, "max_candidates"))] = None,
    dup_agreement: Annotated[Optional[float], typer.Option("--dup-agreement",
                                                           help=option_help(MineOptions, "dup_agreement"))] = None,
    cache_dir: Annotated[Path, typer.Option("--cache-dir", help="LLM reply cache.")] = Path(".trace_cache/llm"),
    concurrency: Annotated[Optional[int], typer.Option("--concurrency",
                                                       help=option_help(MineOptions, "concurrency"))] = None,
    max_pairs: Annotated[Optional[int], typer.Option("--max-pairs", help=option_help(MineOptions, "max_pairs"))] = None,
    llm_max_tokens: Annotated[int, typer.Option("--llm-max-tokens", help="Token budget of one LLM reply.")] = 2000,
    llm_label_runs: Annotated[Optional[int], typer.Option("--llm-label-runs",
                                                          help=option_help(MineOptions, "llm_label_runs"))] = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip runs that do not parse.")] = False,
    kinds: Annotated[Optional[Path], typer.Option("--kinds", help="YAML/JSON tool-kind overrides.")] = None,
    rules: Annotated[Optional[Path], typer.Option(
        "--rules", help="YAML/JSON policy rules (when each write is allowed; see examples/rules/): mined envs then hold "
        "the policy's other conditions neutral.")] = None,
    domain: Annotated[Optional[str], typer.Option("--domain", metavar="NAME", help="Mine only the runs of this "
                                                  "domain (as `inspect` names it), into OUT/.")] = None,
    pool: Annotated[bool, typer.Option("--pool", help="One contrast over every domain's runs, as the paper pools "
                                       "tau2-bench's airline and retail tasks: each candidate is still built from "
                                       "one domain's tools and labels only that domain's runs; Cov and Delta count "
                                       "all failed runs. Offline proposer only; writes into OUT/.")] = False,
    no_publish_check: Annotated[bool, typer.Option(
        "--no-publish-check", help="Keep by the statistics alone: skip validating each kept capability's env as "
        "`generate` will (faster; a kept capability may then be one `generate` refuses).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Mine the capabilities an agent lacks."""
    from pydantic import ValidationError

    from trace_envs.mining.pipeline import ContrastError, mine_by_domain, mine_pooled
    from trace_envs.mining.report import write_outputs
    from trace_envs.trajectories.errors import TrajectoryFormatError
    from trace_envs.trajectories.loaders import load_runs
    from trace_envs.trajectories.profile import split_by_domain

    if offline and llm:
        raise fail("--offline and --llm exclude each other")
    if pool and llm:
        raise fail("--pool mines with the offline proposer only: drop --llm, or mine each domain on its own")
    given = dict(rho=rho, delta=delta, k=k, n=n, seed=seed, max_candidates=max_candidates, dup_agreement=dup_agreement,
                 concurrency=concurrency, max_pairs=max_pairs, llm_label_runs=llm_label_runs,
                 check_publish=False if no_publish_check else None)
    try:
        opts = MineOptions(**{name: value for name, value in given.items() if value is not None})
    except ValidationError as exc:
        raise fail(one_line(exc)) from None
    output_dir(out)  # fail fast, before any work
    client = None
    if llm:
        from trace_envs.mining.llm import LLMClient, LLMConfigError, check_llm_configured

        try:
            check_llm_configured(llm, base_url)
            client = LLMClient(llm, base_url=base_url, cache_dir=cache_dir, max_tokens=llm_max_tokens)
        except LLMConfigError as exc:
            raise fail(str(exc)) from None
    overrides = policy_rules = None
    try:
        if kinds is not None:
            from trace_envs.trajectories.profile import load_overrides

            overrides = load_overrides(kinds)
        if rules is not None:
            from trace_envs.spec.rules import load_rules

            policy_rules = load_rules(rules)
        loaded = load_runs(paths, skip_invalid=skip_invalid)
    except (TrajectoryFormatError, ValueError) as exc:
        raise fail(str(exc)) from None
    if not loaded.runs:
        raise fail(f"{', '.join(paths)}: no runs loaded")
    from trace_envs.trajectories.trust import audit, set_aside

    findings = audit(loaded.runs)
    for finding in findings:
        print(f"warning: {finding.message}")
    groups = split_by_domain(set_aside(loaded.runs, findings))
    if domain is not None:
        if domain not in groups:
            found = ", ".join(f"{name} ({len(runs)} runs)" for name, runs in groups.items())
            raise fail(f"--domain {domain}: no runs of that domain in {', '.join(paths)}; its runs are of: {found}")
        groups = {domain: groups[domain]}
    if policy_rules is not None and len(groups) > 1:
        raise fail(f"--rules {rules}: policy rules are one domain's, and these runs are of {len(groups)} domains "
                   f"({', '.join(groups)}): add --domain NAME")
    runs = [r for group in groups.values() for r in group]
    kwargs = dict(options=opts, llm=client, overrides=overrides, rules=policy_rules)

    def run_mining(progress=None):
        if pool:
            return {"pooled": mine_pooled(runs, options=opts, overrides=overrides, progress=progress)}
        return mine_by_domain(runs, **kwargs, progress=progress)

    try:
        if quiet:
            results = run_mining()
        else:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("labeling"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          transient=True) as bar:
                task = bar.add_task("label", total=len(runs))
                results = run_mining(lambda m: bar.advance(task, m))
    except ContrastError as exc:
        raise fail(str(exc)) from None
    several = len(results) > 1
    if several:
        print(f"{len(results)} domains, each mined on its own into {out}/<domain>/: "
              + ", ".join(f"{name} ({len(groups[name])} runs)" for name in results))
    for name, result in results.items():
        folder = out / name if several else out
        try:
            written = write_outputs(result, folder)
        except OSError as exc:  # the folder changed since the check (removed, made read-only, disk full)
            raise fail(f"{folder}: cannot write the mining outputs: {exc.strerror or exc}") from None
        _print_result(result, written, f"{name}: " if several else "")


def _print_result(result, written: dict, prefix: str) -> None:
    """The summary of one domain's mining: counts, each kept capability, LLM usage, warnings, the files written;
    `prefix` names the domain when several were mined."""
    from trace_envs.mining.gates import GATE_NOTE

    print(f"{prefix}mined {result.n_runs} runs ({result.n_runs - result.n_failed} passed, {result.n_failed} failed) "
          f"with {result.mode}: {len(result.candidates)} candidates, {len(result.capabilities)} kept")
    reason = result.none_kept_reason()
    if reason:
        near = result.closest()
        print(f"  none kept: {reason}" + ("; the closest:" if near else ""))
        for r in near:
            print(f"  {r['name']}\tcov={r['cov']:.2f}\tdelta={r['delta']:.2f}\tpasses={r['passes']}/{r['resamples']}"
                  f"\t{r['status']}")
        for line in result.what_to_add():
            print(f"  to keep something: {line}")
        print("  (every candidate, with why it was not kept, is in candidates.json and report.md)")
    for spec in result.capabilities:
        ev = spec.evidence
        print(f"  {spec.name}\tcov={ev.cov:.2f}\tdelta={ev.delta:.2f}\tpasses={ev.passes}/{ev.resamples}\t"
              f"failed_runs={','.join(ev.lacking_failed[:3])}")
        gate = spec.description.partition(f" {GATE_NOTE} ")[2]
        if gate:  # the gate the env will hold an agent to, and the evidence it rests on
            print(f"    gate: {gate}")
    if result.usage:
        u = result.usage
        cost = "unknown" if u["cost_usd"] is None else f"${u['cost_usd']:.4f}"
        print(f"llm: {u['requests']} requests, {u['cache_hits']} cache hits, {u['input_tokens']}+{u['output_tokens']} "
              f"tokens, cost {cost}")
    for w in result.warnings + result.failures:
        print(f"warning: {w}")
    print("wrote " + ", ".join(str(p) for p in written.values()))


def register(app: typer.Typer) -> None:
    """Add `mine` to the CLI."""
    app.command("mine", help=MINE_HELP, short_help="Find the capabilities an agent lacks.")(mine)
