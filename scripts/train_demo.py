"""`make train-demo`: SmolLM2-135M-Instruct (offline, from PyPI) on one generated env: SFT warm start on oracle
episodes, then GRPO through the TRL bridge for as many steps as fit in --minutes (the GRPO budget; the three
evaluations and the warm start come on top); success rate and mean reward
on the same held-out seeds for the base model, after the warm start and after GRPO; a PNG reward curve.

    python scripts/train_demo.py [--env trace/<name>] [--minutes 30] [--episodes 50] [--out runs/train-demo]
    python scripts/train_demo.py --quick      # a few minutes: proves the pipeline end to end
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def log(msg: str) -> None:
    print(f"[train-demo] {msg}", flush=True)


def time_budget_callback(deadline: float):
    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if time.time() >= deadline:
                control.should_training_stop = True

    return TimeBudget()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default=None)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--minutes", type=float, default=30.0, help="GRPO time budget in minutes.")
    ap.add_argument("--eval-max-new-tokens", type=int, default=128, help="Token budget of one eval turn.")
    ap.add_argument("--episodes", type=int, default=50, help="Held-out seeds for each evaluation.")
    ap.add_argument("--group", type=int, default=4, help="GRPO group size.")
    ap.add_argument("--lr", type=float, default=5e-5, help="GRPO learning rate.")
    ap.add_argument("--sft-episodes", type=int, default=16)
    ap.add_argument("--sft-epochs", type=float, default=3.0)
    ap.add_argument("--sft-lr", type=float, default=1e-3, help="Warm-start learning rate (LoRA).")
    ap.add_argument("--max-completion-length", type=int, default=None,
                    help="Rollout token budget (default: sized from the env's oracle episodes).")
    ap.add_argument("--max-steps", type=int, default=10_000)
    ap.add_argument("--out", default="runs/train-demo")
    ap.add_argument("--quick", action="store_true", help="Tiny run: 6 eval seeds, 8 SFT episodes, 2 GRPO steps.")
    a = ap.parse_args(argv)
    if a.quick:
        a.episodes, a.sft_episodes, a.sft_epochs, a.max_steps, a.group = 6, 4, 1.0, 2, 2

    import gymnasium as gym

    import trace_envs  # noqa: F401
    from adapters_train.evaluate import HFPolicy
    from adapters_train.grpo import train_grpo
    from adapters_train.metrics import reward_curve
    from adapters_train.models import load_policy_model, resolve_model
    from adapters_train.sft import train_sft
    from trace_envs.evaluation import EVAL_SEED_OFFSET, evaluate
    from trace_envs.registry import registered_ids, resolve_env_id
    from trace_envs.training import TrainConfig

    start = time.time()
    try:
        env_id = resolve_env_id(a.env) if a.env else registered_ids()[0]
    except (gym.error.NameNotFound, IndexError) as exc:
        log(f"error: {exc or 'no trace/* env is registered; generate one first (trace-envs generate)'}")
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    evals: dict[str, dict] = {}

    def run_eval(label: str, spec: str, loaded=None) -> None:
        t = time.time()
        pol = HFPolicy(spec, loaded=loaded, temperature=0.0, max_new_tokens=a.eval_max_new_tokens, batch_size=25)
        rep = evaluate(env_id, pol, a.episodes, seed_offset=EVAL_SEED_OFFSET)
        timings[f"eval_{label}_s"] = round(time.time() - t, 1)
        evals[label] = {"success_rate": rep.success_rate, "mean_reward": rep.mean_reward, "clauses": rep.clauses}
        log(f"eval {label}: success {rep.success_rate:.3f}  mean reward {rep.mean_reward:.3f}  ({timings[f'eval_{label}_s']}s)")

    log(f"env {env_id}, model {a.model}, budget {a.minutes} min, {a.episodes} held-out seeds")
    t = time.time()
    base = resolve_model(a.model)
    timings["load_s"] = round(time.time() - t, 1)
    run_eval("base", a.model, loaded=base)

    cfg = TrainConfig(env_id=env_id, model=a.model, out=str(out / "adapters"), steps=a.max_steps,
                      num_generations=a.group, learning_rate=a.lr, max_completion_length=a.max_completion_length,
                      sft_episodes=a.sft_episodes, sft_epochs=a.sft_epochs, sft_learning_rate=a.sft_lr, sft_batch_size=4,
                      logging_steps=1,
                      # a 135M model fits in memory without recomputation, which costs a third more time on CPU
                      grpo={"gradient_checkpointing": False}, sft={"gradient_checkpointing": False})
    t = time.time()
    sft_dir = train_sft(cfg, loaded=resolve_model(a.model))
    timings["sft_s"] = round(time.time() - t, 1)
    log(f"SFT warm start: {sft_dir} ({timings['sft_s']}s)")
    run_eval("warm_start", f"{a.model}+{sft_dir}", loaded=load_policy_model(f"{a.model}+{sft_dir}"))

    grpo_deadline = time.time() + a.minutes * 60
    t = time.time()
    res = train_grpo(cfg, loaded=resolve_model(a.model), init_adapter=sft_dir,
                     callbacks=[time_budget_callback(grpo_deadline)])
    timings["grpo_s"] = round(time.time() - t, 1)
    timings["grpo_s_per_step"] = round(timings["grpo_s"] / max(res.steps, 1), 2)
    log(f"GRPO: {res.steps} steps, final reward {res.final_reward} ({timings['grpo_s']}s, "
        f"{timings['grpo_s_per_step']} s/step)")
    run_eval("grpo", f"{a.model}+{res.adapter_dir}", loaded=load_policy_model(f"{a.model}+{res.adapter_dir}"))

    png = out / "reward_curve.png"
    reward_curve(res.rewards, res.informative, png, f"GRPO on {env_id} ({a.model}, warm start)")
    timings["total_s"] = round(time.time() - start, 1)
    summary = {"env_id": env_id, "model": a.model, "episodes": a.episodes, "seed_offset": EVAL_SEED_OFFSET,
               "grpo_steps": res.steps, "group": a.group, "evals": evals, "timings": timings,
               "rewards": res.rewards, "informative": res.informative, "adapter": str(res.adapter_dir),
               "sft_adapter": str(sft_dir), "reward_curve": str(png)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(f"{'stage':<12} {'success':>8} {'reward':>8}")
    for k, v in evals.items():
        log(f"{k:<12} {v['success_rate']:>8.3f} {v['mean_reward']:>8.3f}")
    log(f"wrote {out / 'summary.json'} and {png} ({timings['total_s']}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
