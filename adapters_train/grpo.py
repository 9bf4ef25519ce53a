"""GRPO + LoRA training of one adapter per capability against a registered env, through the TRL bridge."""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from adapters_train.config import make_grpo_config, make_lora_config
from adapters_train.env_info import env_info
from adapters_train.hints import hinted_count, with_hints
from adapters_train.metrics import (
    metrics_callback,
    metrics_paths,
    progress_line,
    quiet,
    reward_curve,
    step_progress_callback,
)
from adapters_train.models import LoadedModel, resolve_model, save_adapter
from trace_envs.training import TrainConfig, TrainResult


def group_signal_callback() -> Any:
    """A TrainerCallback that prints, per logged step, the mean reward, the share of GRPO groups whose rewards differ
    (the only groups that carry a gradient) and the tokens seen so far, and warns when no group does: a run without
    signal shows at once. TRL gathers these figures over every rank; only rank 0 prints them."""
    from transformers import TrainerCallback

    class GroupSignalCallback(TrainerCallback):
        def __init__(self) -> None:
            self.rewards: list[float] = []
            self.informative: list[float] = []
            self.steps: list[int] = []
            self.num_tokens: list[int] = []
            self._dead = 0

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if not logs or "frac_reward_zero_std" not in logs:
                return
            share = 1.0 - float(logs["frac_reward_zero_std"])
            reward = float(logs.get("reward", float("nan")))
            logs["groups/informative_share"] = share
            if state.log_history and state.log_history[-1].get("frac_reward_zero_std") == logs["frac_reward_zero_std"]:
                state.log_history[-1]["groups/informative_share"] = share
            self.rewards.append(reward)
            self.informative.append(share)
            self.steps.append(int(state.global_step))
            tokens = int(float(logs.get("num_tokens", 0)))
            self.num_tokens.append(tokens)
            self._dead = self._dead + 1 if share == 0.0 else 0
            if not state.is_world_process_zero:
                return
            hinted = "".join(f"  {name} {float(logs[key]):.3f}" for key, name in
                             (("hints/reward_hinted", "hinted"), ("hints/reward_plain", "plain")) if key in logs)
            progress_line(f"[grpo] step {state.global_step}/{state.max_steps}: reward {reward:.3f}{hinted}  "
                          f"informative groups {share:.0%}  tokens {tokens}")
            if self._dead in (3, 20):
                progress_line(
                    f"[grpo] warning: no group with differing rewards for {self._dead} logged steps: no gradient. "
                    "Warm start (--warm-start), raise --hint-fraction or lower the env's difficulty (trace-envs calibrate)."
                )

    return GroupSignalCallback()


def adapter_dir_for(cfg: TrainConfig, env_id: str) -> Path:
    return Path(cfg.out) / env_id.split("/")[-1]


def train_grpo(
    cfg: TrainConfig,
    *,
    loaded: LoadedModel | None = None,
    init_adapter: str | Path | None = None,
    trainer_cls: type | None = None,
    callbacks: list[Any] | None = None,
    adapter_dir: str | Path | None = None,
    save: bool = True,
) -> TrainResult:
    """Train one LoRA adapter on `cfg.env_id` with GRPO; save it (PEFT format + model card) under
    `adapter_dir` (default `cfg.out/<capability>`). With `cfg.warm_start`, an SFT warm start on oracle episodes runs
    first and GRPO continues its adapter.

    Under `torchrun` / `accelerate launch` the ranks form one data-parallel job: each step's prompts (one seed per
    GRPO group) are drawn once for the whole job and split across the ranks by TRL's sampler, so the job sees
    `world_size` times the groups of one process; only the main process saves the adapter (the result's
    `main_process` says which one this is).

    Every trainer log goes to `<adapter>.metrics.jsonl` beside the adapter folder (not to the console, which gets one
    line per step) and the reward curve to `<adapter>.reward.png`, whether or not the adapter is saved."""
    from trl import GRPOTrainer

    from adapters_train.distributed import debug_dir, seed_recorder, write_debug_dump
    from trace_envs.integrations.trl import bridge_class, build_dataset

    t0 = time.perf_counter()
    info = env_info(cfg.env_id)
    cfg = cfg.replace(env_id=info["env_id"])  # the resolved id (a bare name becomes trace/<name>)
    target = Path(adapter_dir) if adapter_dir else adapter_dir_for(cfg, cfg.env_id)
    metrics_path, curve_path = metrics_paths(target)
    if int(os.environ.get("RANK", "0")) == 0:  # one file per run: the main process starts it afresh
        metrics_path.unlink(missing_ok=True)
    loaded = loaded or resolve_model(cfg.model, chat_template=cfg.chat_template, seed=cfg.seed)
    sft_dir = None
    if cfg.warm_start and init_adapter is None:
        from adapters_train.sft import train_sft

        sft_dir = target.parent / f"{target.name}-sft"
        train_sft(cfg, loaded=loaded, adapter_dir=sft_dir, metrics_path=metrics_path)
        loaded = resolve_model(cfg.model, chat_template=cfg.chat_template, seed=cfg.seed)
        init_adapter = sft_dir
    model: Any = loaded.model
    peft_config = None
    if init_adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(init_adapter), is_trainable=True)
    else:
        peft_config = make_lora_config(cfg)

    total, turn = completion_budget(cfg, loaded.tokenizer)
    per_turn = ""
    if not cfg.grpo.get("use_vllm"):  # transformers' generate takes a turn's budget; vLLM's sampling params do not
        own = cfg.grpo.get("generation_kwargs") or {}
        cfg = cfg.replace(grpo={**cfg.grpo, "generation_kwargs": {"max_new_tokens": turn, **own}})
        per_turn = f", {cfg.grpo['generation_kwargs']['max_new_tokens']} a turn"
    cfg = cfg.replace(max_completion_length=total)
    factory = bridge_class(cfg.env_id, user_tool=cfg.user_tool)
    signal = group_signal_callback()
    with tempfile.TemporaryDirectory(prefix="trace-grpo-") as tmp:
        args = make_grpo_config(cfg, cfg.grpo.get("output_dir", tmp), max_turns=info["max_turns"])
        # One distinct scenario seed per group of the whole job: a step takes prompts_per_step groups per rank.
        n_prompts = max(cfg.steps * cfg.prompts_per_step * args.world_size, 1)
        seeds = range(cfg.train_seed_start, cfg.train_seed_start + n_prompts)
        # Plain rows: the hint reaches a share of each group through the trainer, never through the dataset.
        dataset = build_dataset(cfg.env_id, seeds, user_tool=cfg.user_tool, hint=False if cfg.hint_fraction else None)
        trainer = with_hints(trainer_cls or GRPOTrainer, cfg.hint_fraction)(
            model=model,
            args=args,
            train_dataset=dataset,
            processing_class=loaded.tokenizer,
            peft_config=peft_config,
            environment_factory=factory,
            callbacks=[signal, step_progress_callback("grpo", loss_key=None), metrics_callback(metrics_path, "grpo"),
                       *(callbacks or [])],
        )
        quiet(trainer)
        hinted = hinted_count(int(args.num_generations), cfg.hint_fraction)
        progress_line(f"[grpo] {cfg.env_id}: {cfg.steps} steps of {args.num_generations} rollouts, {hinted} hinted "
                      f"per group, up to {args.max_completion_length} tokens each{per_turn} (model {loaded.name})")
        dump_to = debug_dir()
        recorder = seed_recorder(trainer) if dump_to else None
        if recorder is not None:
            trainer.add_callback(recorder)
        trainer.train()
        main = trainer.accelerator.is_main_process
        final = _final_reward(signal.rewards)
        meta = {
            **{k: v for k, v in info.items() if k != "max_turns"},
            "method": "grpo+sft" if sft_dir or init_adapter else "grpo",
            "base_model": loaded.name,
            "steps": int(trainer.state.global_step),
            "final_reward": final,
            "num_generations": args.num_generations,
            "learning_rate": args.learning_rate,
            "lora_r": cfg.lora.get("r", cfg.lora_r),
            "target_modules": cfg.lora.get("target_modules", cfg.target_modules),
            "warm_start": str(init_adapter) if init_adapter else None,
            "world_size": int(args.world_size),
            "hint_fraction": cfg.hint_fraction,
            "hinted_per_group": hinted_count(int(args.num_generations), cfg.hint_fraction),
            "informative_group_share": (sum(signal.informative) / len(signal.informative)) if signal.informative else None,
            "trained_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        if save and main:
            save_adapter(trainer.model, loaded.tokenizer, target, meta)
        if main:
            reward_curve(signal.rewards, signal.informative, curve_path, f"GRPO on {cfg.env_id} ({loaded.name})")
        if dump_to:
            write_debug_dump(trainer, recorder, dump_to, saved_adapter=save and main)
        trainer.accelerator.wait_for_everyone()  # the other ranks return once the adapter is in place
        out = target if save else None
        steps = int(trainer.state.global_step)
    return TrainResult(
        env_id=cfg.env_id,
        adapter_dir=out,
        steps=steps,
        final_reward=final,
        rewards=list(signal.rewards),
        informative=list(signal.informative),
        seconds=time.perf_counter() - t0,
        sft_dir=sft_dir,
        num_tokens=list(signal.num_tokens),
        main_process=main,
        metrics_path=metrics_path if main else None,
        curve_path=curve_path if main else None,
    )


BUDGET_SEEDS = 8


def _size(tokens: int) -> int:
    """A quarter more than `tokens`, rounded up to a multiple of 64."""
    return -(-tokens * 5 // (4 * 64)) * 64


def completion_budget(cfg: TrainConfig, tokenizer: Any) -> tuple[int, int]:
    """The token budgets of a rollout, sized from the oracle episodes of the first `BUDGET_SEEDS` training seeds: the
    whole completion (`cfg.max_completion_length` when set, else the longest oracle completion plus a quarter, in
    steps of 64) and one assistant turn (the longest oracle turn plus a quarter: TRL would otherwise let every turn run
    to the whole budget, and one rambling rollout holds up its group). A set budget below the oracle's warns: TRL cuts
    every rollout there, so none that needs as many turns can succeed and GRPO learns nothing."""
    from adapters_train.sft import oracle_lengths

    seeds = range(cfg.train_seed_start, cfg.train_seed_start + BUDGET_SEEDS)
    needed, turn = oracle_lengths(cfg.env_id, seeds, tokenizer, user_tool=cfg.user_tool)
    total = cfg.max_completion_length
    if total is None:
        total = _size(needed)
    elif total < needed:
        progress_line(f"[grpo] warning: max_completion_length {total} is below the {needed} tokens the oracle "
                      f"episodes of {cfg.env_id} take after the prompt (tool results count): rollouts are cut before "
                      "they can finish; leave it unset to size it from them")
    return total, min(total, _size(turn))


def _final_reward(rewards: list[float], window: int = 5) -> float | None:
    tail = [r for r in rewards[-window:] if r == r]
    return round(sum(tail) / len(tail), 4) if tail else None


def train_all(cfg: TrainConfig, env_ids: list[str] | None = None, **kwargs: Any) -> list[TrainResult]:
    """One adapter per capability: every registered `trace/*` env (or `env_ids`)."""
    from trace_envs.registry import registered_ids

    results = []
    for env_id in env_ids or registered_ids():
        progress_line(f"[grpo] training {env_id}")
        results.append(train_grpo(cfg.replace(env_id=env_id), **kwargs))
    return results
