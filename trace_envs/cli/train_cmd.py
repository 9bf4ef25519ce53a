"""`trace-envs train | sft | eval | calibrate`: training adapters and measuring policies on envs.

Training, model-backed policies and calibration are reached through the training seam (`trace_envs.training`), so the
core CLI works without the `train` extra, and scripted evaluation needs none of it. Flags map onto the option models
(`TrainConfig`, `EvalOptions`), which hold every default and range check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from trace_envs.cli.common import fail, one_line, option_help, resolve_env, training_or_fail
from trace_envs.evaluation.options import EvalOptions
from trace_envs.training.config import TrainConfig

_ENV_HELP = "Env id, e.g. trace/<capability> (or just <capability>)."


def train(
    env: Annotated[Optional[str], typer.Argument(help=_ENV_HELP)] = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help=option_help(TrainConfig, "model"))] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help=option_help(TrainConfig, "out"))] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="Train one adapter per registered trace/* env.")] = False,
    steps: Annotated[Optional[int], typer.Option(help=option_help(TrainConfig, "steps"))] = None,
    num_generations: Annotated[Optional[int], typer.Option("--num-generations", "-g", help=option_help(TrainConfig, "num_generations"))] = None,
    learning_rate: Annotated[Optional[float], typer.Option("--lr", help=option_help(TrainConfig, "learning_rate"))] = None,
    lora_r: Annotated[Optional[int], typer.Option("--lora-r", help=option_help(TrainConfig, "lora_r"))] = None,
    max_completion_length: Annotated[Optional[int], typer.Option(help=option_help(TrainConfig, "max_completion_length"))] = None,
    warm_start: Annotated[bool, typer.Option("--warm-start", help=TrainConfig.model_fields["warm_start"].description)] = False,
    hint_fraction: Annotated[Optional[float], typer.Option("--hint-fraction", help=option_help(TrainConfig, "hint_fraction"))] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML/JSON: TrainConfig fields and GRPOConfig/LoraConfig/SFTConfig kwargs.")] = None,
    chat_template: Annotated[Optional[str], typer.Option(help=TrainConfig.model_fields["chat_template"].description)] = None,
    seed: Annotated[Optional[int], typer.Option(help=option_help(TrainConfig, "seed"))] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object per adapter.")] = False,
) -> None:
    """Train a LoRA adapter per capability with GRPO (TRL + PEFT) against the env, through the TRL bridge.

    Data-parallel: under `torchrun --nproc_per_node N -m trace_envs train ...` or `accelerate launch -m trace_envs
    train ...` the N processes are one job (gloo on CPU, nccl on GPUs): each step takes N x the groups of one process,
    split across the ranks, gradients are averaged, and only rank 0 prints and writes the adapter. vLLM and every
    other TRL option go through --config (grpo: {use_vllm: true, vllm_mode: server}).

    Debug: TRACE_ENVS_DEBUG_DIR=DIR makes every rank write DIR/rank<N>.json (sha256 of its LoRA tensors, the
    scenario seeds of each step's rollouts) to check that the ranks trained one model.
    """
    trainer = training_or_fail(stack=True)
    from trace_envs.registry import registered_ids
    from trace_envs.training import load_config

    if not env and not all_envs:
        raise fail("give an ENV or --all")
    env_ids = registered_ids() if all_envs else [resolve_env(env or "")]
    if not env_ids:
        raise fail("no trace/* env is registered (run trace-envs generate first)")
    try:
        cfg = load_config(
            config, model=model, out=None if out is None else str(out), steps=steps, num_generations=num_generations,
            learning_rate=learning_rate, lora_r=lora_r, max_completion_length=max_completion_length,
            chat_template=chat_template, seed=seed, warm_start=warm_start or None, hint_fraction=hint_fraction,
        )
    except (OSError, ValueError) as exc:
        raise fail(f"config: {one_line(exc)}") from None
    for env_id in env_ids:
        try:
            res = trainer.train_grpo(cfg.replace(env_id=env_id))
        except ValueError as exc:  # a model TRL cannot train (chat template), a name that is no model
            raise fail(str(exc)) from None
        if not res.main_process:  # one data-parallel job: rank 0 reports it
            continue
        line = {"env_id": env_id, "adapter": str(res.adapter_dir), "steps": res.steps, "final_reward": res.final_reward,
                "hint_fraction": cfg.hint_fraction,
                "informative_group_share": (sum(res.informative) / len(res.informative)) if res.informative else None,
                "num_tokens": res.num_tokens, "seconds": round(res.seconds, 1), "metrics": str(res.metrics_path),
                "reward_curve": str(res.curve_path)}
        print(json.dumps(line) if json_out else
              f"{env_id}: adapter {res.adapter_dir}  steps {res.steps}  final reward {res.final_reward}  "
              f"({res.seconds:.0f}s)\n  metrics {res.metrics_path}\n  reward curve {res.curve_path}")


def sft(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help=option_help(TrainConfig, "model"))] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Adapter folder (default adapters/<name>-sft).")] = None,
    episodes: Annotated[Optional[int], typer.Option(help=option_help(TrainConfig, "sft_episodes"))] = None,
    epochs: Annotated[Optional[float], typer.Option(help=option_help(TrainConfig, "sft_epochs"))] = None,
    learning_rate: Annotated[Optional[float], typer.Option("--lr", help=option_help(TrainConfig, "sft_learning_rate"))] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML/JSON config (sft: section = SFTConfig kwargs).")] = None,
    chat_template: Annotated[Optional[str], typer.Option(help=TrainConfig.model_fields["chat_template"].description)] = None,
) -> None:
    """Warm start: train a LoRA with TRL's SFTTrainer on the env's oracle episodes (replayed through the bridge)."""
    trainer = training_or_fail(stack=True)
    from trace_envs.training import load_config

    env_id = resolve_env(env)
    try:
        cfg = load_config(config, env_id=env_id, model=model, sft_episodes=episodes, sft_epochs=epochs,
                          sft_learning_rate=learning_rate, chat_template=chat_template)
        path = trainer.train_sft(cfg, adapter_dir=out)
    except (OSError, ValueError) as exc:
        raise fail(one_line(exc)) from None
    print(f"{env_id}: SFT adapter {path}\n  metrics {trainer.metrics_paths(path)[0]}")


def eval_cmd(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    policy: Annotated[str, typer.Option("--policy", "-p", help="hf:MODEL[+ADAPTER] | routed:BASE+ADAPTERS_DIR | openai:MODEL | scripted:oracle|random|passive")] = "scripted:oracle",
    episodes: Annotated[Optional[int], typer.Option("--episodes", "-n", help=option_help(EvalOptions, "episodes"))] = None,
    samples: Annotated[Optional[int], typer.Option("--samples", "-k", help=option_help(EvalOptions, "samples"))] = None,
    seed_offset: Annotated[Optional[int], typer.Option("--seed-offset", help=option_help(EvalOptions, "seed_offset"))] = None,
    temperature: Annotated[Optional[float], typer.Option(help=option_help(EvalOptions, "temperature"))] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help=EvalOptions.model_fields["base_url"].description)] = None,
    max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help=EvalOptions.model_fields["max_new_tokens"].description)] = None,
    chat_template: Annotated[Optional[str], typer.Option(help=EvalOptions.model_fields["chat_template"].description)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    transcripts: Annotated[Optional[Path], typer.Option("--transcripts", help="Write one JSON line per episode (seed, messages, tool calls, reward, breakdown, reasons); read it with `trace-envs show FILE`.")] = None,
    route_method: Annotated[Optional[str], typer.Option("--route-method", help=option_help(EvalOptions, "routing"))] = None,
) -> None:
    """Evaluate a policy: success rate, mean reward, per-clause breakdown and pass@k on fixed seeds."""
    from trace_envs.evaluation import evaluate, parse_policy
    from trace_envs.training import TrainingUnavailable

    given = dict(episodes=episodes, samples=samples, seed_offset=seed_offset, temperature=temperature,
                 base_url=base_url, max_new_tokens=max_new_tokens, chat_template=chat_template, routing=route_method)
    try:
        options = EvalOptions(**{k: v for k, v in given.items() if v is not None})
        spec = parse_policy(policy)
    except ValueError as exc:
        raise fail(one_line(exc)) from None
    if spec.kind in ("hf", "routed"):
        training_or_fail(stack=True)
    env_id = resolve_env(env)
    try:
        report = evaluate(env_id, spec.text, progress=not json_out, **options.model_dump())
    except (ValueError, TrainingUnavailable) as exc:
        raise fail(str(exc)) from None
    if transcripts is not None:
        from trace_envs.transcripts import write_transcripts

        try:
            written = write_transcripts(report, transcripts)
        except OSError as exc:
            raise fail(f"{transcripts}: cannot write transcripts ({exc})") from None
        print(f"transcripts: {written} episodes in {transcripts} (trace-envs show {transcripts})", file=sys.stderr)
    print(json.dumps(report.to_dict(), indent=2) if json_out else report.format())


def calibrate_cmd(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    policy: Annotated[str, typer.Option("--policy", "-p", help="hf:MODEL[+ADAPTER] | openai:MODEL | scripted:...")] = "hf:smollm2",
    groups: Annotated[int, typer.Option("--groups", "-G", help="Groups (one seed each).")] = 16,
    k: Annotated[int, typer.Option("--k", "-k", help="Rollouts per group (the GRPO group size).")] = 8,
    temperature: Annotated[Optional[float], typer.Option(help="Sampling temperature of model policies (default 1: a GRPO group samples).")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help=EvalOptions.model_fields["base_url"].description)] = None,
    chat_template: Annotated[Optional[str], typer.Option(help=EvalOptions.model_fields["chat_template"].description)] = None,
    hint_fraction: Annotated[Optional[float], typer.Option("--hint-fraction", help="Hint this share of every group's rollouts, as training does (report hinted and plain success apart and suggest the share).")] = None,
    max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help=EvalOptions.model_fields["max_new_tokens"].description)] = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", help=EvalOptions.model_fields["max_turns"].description)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
) -> None:
    """Is this env trainable for this policy? Reward, success, group statistics, pass@k, verdict and the knob to turn."""
    from trace_envs.evaluation import parse_policy

    try:
        spec = parse_policy(policy)
    except ValueError as exc:
        raise fail(str(exc)) from None
    trainer = training_or_fail(stack=spec.kind in ("hf", "routed"))
    env_id = resolve_env(env)
    try:
        report = trainer.calibrate(env_id, policy, groups, k, temperature=temperature, base_url=base_url,
                                   chat_template=chat_template, progress=not json_out, hint_fraction=hint_fraction,
                                   max_new_tokens=max_new_tokens, max_turns=max_turns)
    except ValueError as exc:
        raise fail(one_line(exc)) from None
    print(json.dumps(report.to_dict(), indent=2) if json_out else report.format())


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("sft")(sft)
    app.command("eval")(eval_cmd)
    app.command("calibrate")(calibrate_cmd)
