"""SFT warm start: the env's oracle episodes, replayed through the TRL bridge (so they have exactly the form GRPO
rollouts take: tool calls, `send_message_to_user`, a final plain message), trained into a LoRA with TRL's SFTTrainer.
The loss covers the assistant turns only (tool results and user replies are masked).

Sequences are as long as the longest episode (bounded by the model's context, or by `sft: {max_length: N}`): mined envs
carry the target's whole policy in the system prompt, so a fixed cut can fall before the first assistant turn and leave
nothing to learn from."""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from adapters_train.config import make_lora_config, make_sft_config
from adapters_train.env_info import env_info
from adapters_train.metrics import metrics_callback, metrics_paths, progress_line, quiet, step_progress_callback
from adapters_train.models import LoadedModel, resolve_model, save_adapter
from trace_envs.training import TrainConfig


def _ids(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], gen: bool) -> list[int]:
    out = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=gen, tokenize=True, return_dict=False)
    return list(out)


def tokenize_conversation(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, list[int]]:
    """`input_ids` of the whole conversation and `assistant_masks` (1 on the tokens of each assistant turn), from the
    chat template's own rendering of every prefix (the template must be prefix-preserving, as TRL requires too)."""
    full = _ids(tokenizer, messages, tools, gen=False)
    mask = [0] * len(full)
    for j, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        start = len(_ids(tokenizer, messages[:j], tools, gen=True))
        end = len(_ids(tokenizer, messages[: j + 1], tools, gen=False))
        if full[:end][:start] != _ids(tokenizer, messages[:j], tools, gen=True)[:start]:
            raise ValueError("the chat template is not prefix-preserving; cannot mask assistant turns")
        for i in range(start, min(end, len(full))):
            mask[i] = 1
    return {"input_ids": full, "assistant_masks": mask}


def oracle_sft_dataset(env_id: str, seeds: Iterable[int], tokenizer: Any, *, user_tool: bool = True) -> Any:
    """Tokenized SFT rows (`input_ids`, `assistant_masks`) from the oracle episodes at `seeds`; only episodes whose
    replay through the bridge scores 1.0 are kept."""
    from datasets import Dataset

    from trace_envs.integrations.trl import bridge_class, oracle_conversation

    cls = bridge_class(env_id, user_tool=user_tool)
    rows = []
    for seed in seeds:
        conv = oracle_conversation(env_id, int(seed), factory=cls, user_tool=user_tool)
        if conv["reward"] < 1.0:
            continue
        rows.append(tokenize_conversation(tokenizer, conv["messages"], conv["tools"]))
    if not rows:
        raise RuntimeError(f"{env_id}: no oracle episode scored 1.0 through the bridge; nothing to warm-start on")
    return Dataset.from_list(rows)


def oracle_lengths(env_id: str, seeds: Iterable[int], tokenizer: Any, *, user_tool: bool = True) -> tuple[int, int]:
    """The longest completion and the longest assistant turn of the oracle episodes at `seeds`, in tokens, as TRL's
    loop counts them: a completion is everything after the prompt, the tool results and the user's replies included."""
    from trace_envs.integrations.trl import bridge_class, oracle_conversation

    cls = bridge_class(env_id, user_tool=user_tool)
    completion = turn = 0
    for seed in seeds:
        conv = oracle_conversation(env_id, int(seed), factory=cls, user_tool=user_tool)
        mask = tokenize_conversation(tokenizer, conv["messages"], conv["tools"])["assistant_masks"]
        completion = max(completion, len(mask) - mask.index(1)) if 1 in mask else completion
        run = 0
        for bit in mask:
            run = run + 1 if bit else 0
            turn = max(turn, run)
    return completion, turn


def sequence_length(cfg: TrainConfig, model: Any, rows: Any) -> int:
    """The SFT sequence length: `sft: {max_length: N}` when set, else the longest episode's, capped at the model's
    context (`max_position_embeddings`)."""
    if cfg.sft.get("max_length"):
        return int(cfg.sft["max_length"])
    longest = max(len(ids) for ids in rows["input_ids"])
    context = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return min(longest, int(context)) if context else longest


def fit_to_length(dataset: Any, max_length: int, env_id: str) -> Any:
    """Keep the episodes that still have an assistant token within `max_length` tokens (truncation keeps the start);
    a ValueError that says what to change when none does."""
    keep = [i for i, mask in enumerate(dataset["assistant_masks"]) if any(mask[:max_length])]
    if not keep:
        first = min(mask.index(1) for mask in dataset["assistant_masks"])
        raise ValueError(
            f"{env_id}: no oracle episode has an assistant token within the SFT sequence length of {max_length} tokens "
            f"(the earliest assistant turn starts at token {first}); raise it with `sft: {{max_length: N}}` in the "
            "config or use a model with a longer context"
        )
    return dataset if len(keep) == len(dataset) else dataset.select(keep)


def train_sft(
    cfg: TrainConfig,
    *,
    loaded: LoadedModel | None = None,
    adapter_dir: str | Path | None = None,
    seeds: Iterable[int] | None = None,
    metrics_path: Path | None = None,
) -> Path:
    """Train a LoRA on oracle episodes of `cfg.env_id` and save it (PEFT format + card) atomically; in a
    data-parallel job the episodes are split across the ranks and the main process saves.

    Args:
        cfg: the training config (`sft_*` fields, the `sft:` section for SFTConfig).
        loaded: the base model to train (loaded from `cfg.model` when None).
        adapter_dir: where to save (default `cfg.out/<capability>-sft`).
        seeds: the oracle episodes' seeds (default: `cfg.sft_episodes` seeds from 500,000).
        metrics_path: the JSONL file the trainer's logs are appended to (default: beside the adapter).
    """
    from trl import SFTTrainer

    t0 = time.perf_counter()
    info = env_info(cfg.env_id)
    cfg = cfg.replace(env_id=info["env_id"])  # the resolved id (a bare name becomes trace/<name>)
    loaded = loaded or resolve_model(cfg.model, chat_template=cfg.chat_template, seed=cfg.seed)
    # Warm-start seeds sit above the GRPO seeds and below the held-out eval seeds.
    seeds = seeds if seeds is not None else range(500_000, 500_000 + cfg.sft_episodes)
    dataset = oracle_sft_dataset(cfg.env_id, seeds, loaded.tokenizer, user_tool=cfg.user_tool)
    max_length = sequence_length(cfg, loaded.model, dataset)
    dataset = fit_to_length(dataset, max_length, cfg.env_id)
    target = Path(adapter_dir) if adapter_dir else Path(cfg.out) / f"{cfg.env_id.split('/')[-1]}-sft"
    if metrics_path is None:  # a run of its own (not a GRPO warm start): its own file, started afresh
        metrics_path = metrics_paths(target)[0]
        if int(os.environ.get("RANK", "0")) == 0:
            metrics_path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="trace-sft-") as tmp:
        trainer = SFTTrainer(
            model=loaded.model,
            args=make_sft_config(cfg, tmp, max_length=max_length),
            train_dataset=dataset,
            processing_class=loaded.tokenizer,
            peft_config=make_lora_config(cfg),
            callbacks=[step_progress_callback("sft"), metrics_callback(metrics_path, "sft")],
        )
        quiet(trainer)
        if trainer.accelerator.is_main_process:
            progress_line(f"[sft] {cfg.env_id}: {len(dataset)} oracle episodes, sequence length {max_length}, "
                 f"{trainer.args.num_train_epochs:g} epochs (model {loaded.name})")
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        meta = {
            **{k: v for k, v in info.items() if k != "max_turns"},
            "method": "sft",
            "base_model": loaded.name,
            "steps": int(trainer.state.global_step),
            "episodes": len(dataset),
            "max_length": max_length,
            "final_loss": round(float(losses[-1]), 4) if losses else None,
            "final_reward": None,
            "lora_r": cfg.lora.get("r", cfg.lora_r),
            "target_modules": cfg.lora.get("target_modules", cfg.target_modules),
            "seconds": round(time.perf_counter() - t0, 1),
            "trained_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        # Under torchrun / accelerate launch only the main process writes; the others wait until it is in place
        # (GRPO on every rank continues from it next).
        if trainer.accelerator.is_main_process:
            save_adapter(trainer.model, loaded.tokenizer, target, meta)
        trainer.accelerator.wait_for_everyone()
        out = target
    # SFTTrainer wrapped the base model in place; unload so the caller's model is clean again.
    return out
