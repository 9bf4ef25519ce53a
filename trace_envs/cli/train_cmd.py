"""`trace-envs train | sft | eval | calibrate`: training adapters and measuring policies on envs.

The training stack (adapters_train, torch, transformers, trl, peft) is imported lazily inside each command, so the
core CLI works without the `train` extra.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from trace_envs.cli.common import fail, resolve_env

_ENV_HELP = "Env id, e.g. trace/<capability> (or just <capability>)."


def quiet() -> None:
    """Keep the console to progress lines: no notice that TRL's environment_factory is experimental, no dataset
    preprocessing bars, no tokenizer fork warnings (the trainers' own logs go to the metrics file)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    # raised from inside TRL / PEFT on every trainer; nothing a user of this CLI can change
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)


def _need_training_stack() -> None:
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError as exc:
        raise fail(f"the training stack is not installed ({exc.name}): pip install 'trace-envs[train]'") from None


def train(
    env: Annotated[Optional[str], typer.Argument(help=_ENV_HELP)] = None,
    model: Annotated[str, typer.Option("--model", "-m", help="Local path, hub id, `smollm2` or `tiny`.")] = "smollm2",
    out: Annotated[Path, typer.Option("--out", "-o", help="Adapters folder (one sub-folder per capability).")] = Path("adapters"),
    all_envs: Annotated[bool, typer.Option("--all", help="Train one adapter per registered trace/* env.")] = False,
    steps: Annotated[Optional[int], typer.Option(help="GRPO steps (default 160).")] = None,
    num_generations: Annotated[Optional[int], typer.Option("--num-generations", "-g", help="Group size (default 8).")] = None,
    learning_rate: Annotated[Optional[float], typer.Option("--lr", help="Learning rate (default 1e-5).")] = None,
    lora_r: Annotated[Optional[int], typer.Option("--lora-r", help="LoRA rank (default 16, all linear layers).")] = None,
    max_completion_length: Annotated[Optional[int], typer.Option(help="Token budget of a rollout (default 512).")] = None,
    warm_start: Annotated[bool, typer.Option("--warm-start", help="SFT on oracle episodes first, then GRPO.")] = False,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML/JSON: TrainConfig fields and GRPOConfig/LoraConfig/SFTConfig kwargs.")] = None,
    chat_template: Annotated[Optional[str], typer.Option(help="Replace the model's chat template (a TRL template name such as qwen2_5, or a .jinja file).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Training seed.")] = None,
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
    _need_training_stack()
    quiet()
    from adapters_train.config import load_config
    from adapters_train.grpo import train_grpo
    from adapters_train.models import ToolTemplateError
    from trace_envs.registry import registered_ids

    if not env and not all_envs:
        raise fail("give an ENV or --all")
    env_ids = registered_ids() if all_envs else [resolve_env(env or "")]
    if not env_ids:
        raise fail("no trace/* env is registered (run trace-envs generate first)")
    try:
        cfg = load_config(
            config, model=model, out=str(out), steps=steps, num_generations=num_generations, learning_rate=learning_rate,
            lora_r=lora_r, max_completion_length=max_completion_length, chat_template=chat_template, seed=seed,
            warm_start=warm_start or None,
        )
    except (OSError, ValueError) as exc:
        raise fail(f"config: {exc}") from None
    for env_id in env_ids:
        try:
            res = train_grpo(cfg.replace(env_id=env_id))
        except (ToolTemplateError, ValueError) as exc:
            raise fail(str(exc)) from None
        if not res.main_process:  # one data-parallel job: rank 0 reports it
            continue
        line = {"env_id": env_id, "adapter": str(res.adapter_dir), "steps": res.steps, "final_reward": res.final_reward,
                "informative_group_share": (sum(res.informative) / len(res.informative)) if res.informative else None,
                "num_tokens": res.num_tokens, "seconds": round(res.seconds, 1), "metrics": str(res.metrics_path),
                "reward_curve": str(res.curve_path)}
        print(json.dumps(line) if json_out else
              f"{env_id}: adapter {res.adapter_dir}  steps {res.steps}  final reward {res.final_reward}  "
              f"({res.seconds:.0f}s)\n  metrics {res.metrics_path}\n  reward curve {res.curve_path}")


def sft(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    model: Annotated[str, typer.Option("--model", "-m", help="Local path, hub id, `smollm2` or `tiny`.")] = "smollm2",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Adapter folder (default adapters/<name>-sft).")] = None,
    episodes: Annotated[Optional[int], typer.Option(help="Oracle episodes (default 64).")] = None,
    epochs: Annotated[Optional[float], typer.Option(help="Epochs (default 2).")] = None,
    learning_rate: Annotated[Optional[float], typer.Option("--lr", help="Learning rate (default 2e-4).")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML/JSON config (sft: section = SFTConfig kwargs).")] = None,
    chat_template: Annotated[Optional[str], typer.Option(help="Replace the model's chat template (TRL name or .jinja).")] = None,
) -> None:
    """Warm start: train a LoRA with TRL's SFTTrainer on the env's oracle episodes (replayed through the bridge)."""
    _need_training_stack()
    quiet()
    from adapters_train.config import load_config
    from adapters_train.models import ToolTemplateError
    from adapters_train.sft import train_sft

    env_id = resolve_env(env)
    try:
        cfg = load_config(config, env_id=env_id, model=model, sft_episodes=episodes, sft_epochs=epochs,
                          sft_learning_rate=learning_rate, chat_template=chat_template)
        path = train_sft(cfg, adapter_dir=out)
    except ToolTemplateError as exc:
        raise fail(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    from adapters_train.metrics import metrics_paths

    print(f"{env_id}: SFT adapter {path}\n  metrics {metrics_paths(path)[0]}")


def eval_cmd(
    env: Annotated[str, typer.Argument(help=_ENV_HELP)],
    policy: Annotated[str, typer.Option("--policy", "-p", help="hf:MODEL[+ADAPTER] | routed:BASE+ADAPTERS_DIR | openai:MODEL | scripted:oracle|random|passive")] = "scripted:oracle",
    episodes: Annotated[int, typer.Option("--episodes", "-n", help="Number of fixed seeds.")] = 50,
    samples: Annotated[int, typer.Option("--samples", "-k", help="Rollouts per seed (pass@k needs k).")] = 1,
    seed_offset: Annotated[Optional[int], typer.Option("--seed-offset", help="First seed (default: the held-out range).")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature of model policies (0: greedy).")] = 0.0,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible base URL (or OPENAI_BASE_URL).")] = None,
    max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help="Token budget of one model reply (default 256 for hf:, 512 for openai:).")] = None,
    chat_template: Annotated[Optional[str], typer.Option(help="Replace the model's chat template (TRL name or .jinja).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    transcripts: Annotated[Optional[Path], typer.Option("--transcripts", help="Write one JSON line per episode (seed, messages, tool calls, reward, breakdown, reasons); read it with `trace-envs show FILE`.")] = None,
) -> None:
    """Evaluate a policy: success rate, mean reward, per-clause breakdown and pass@k on fixed seeds."""
    from trace_envs.evaluation import EVAL_SEED_OFFSET

    if policy.startswith(("hf:", "routed:")):
        _need_training_stack()
    quiet()
    env_id = resolve_env(env)
    offset = EVAL_SEED_OFFSET if seed_offset is None else seed_offset
    try:
        if policy.startswith("scripted:"):  # no model: the training stack is neither needed nor imported
            from trace_envs.evaluation import evaluate as evaluate_scripted

            report = evaluate_scripted(env_id, policy, episodes, samples=samples, seed_offset=offset)
        else:
            from adapters_train.evaluate import evaluate

            report = evaluate(env_id, policy, episodes, samples=samples, seed_offset=offset, temperature=temperature,
                              base_url=base_url, chat_template=chat_template, progress=not json_out,
                              **({"max_new_tokens": max_new_tokens} if max_new_tokens else {}))
    except ValueError as exc:
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
    temperature: Annotated[float, typer.Option(help="Sampling temperature of model policies.")] = 1.0,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible base URL.")] = None,
    chat_template: Annotated[Optional[str], typer.Option(help="Replace the model's chat template (TRL name or .jinja).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
) -> None:
    """Is this env trainable for this policy? Reward, success, group statistics, pass@k, verdict and the knob to turn."""
    if policy.startswith("hf:"):
        _need_training_stack()
    quiet()
    from adapters_train.calibrate import calibrate

    env_id = resolve_env(env)
    try:
        report = calibrate(env_id, policy, groups, k, temperature=temperature, base_url=base_url,
                           chat_template=chat_template, progress=not json_out)
    except ValueError as exc:
        raise fail(str(exc)) from None
    print(json.dumps(report.to_dict(), indent=2) if json_out else report.format())


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("sft")(sft)
    app.command("eval")(eval_cmd)
    app.command("calibrate")(calibrate_cmd)
