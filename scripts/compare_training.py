"""The training comparison of docs/figures.md: on the demo's two capabilities, at equal GRPO rollouts, success on the
same held-out seeds after plain GRPO, after GRPO with hints, and after a warm start + GRPO with hints (the demo's own
adapters); and PEFT's Arrow over both adapters against each capability's single adapter.

    make demo && python scripts/compare_training.py [--demo runs/demo] [--out runs/compare]

`make demo` mines the envs, trains the warm-started adapters and evaluates them; this script reads the demo's options
and reports, trains the two arms without a warm start with the same GRPO steps, group size and budget (hint fraction 0
and the demo's), evaluates them and Arrow with the demo's evaluation options, and writes `compare.json` and
`compare.md` into --out. Each arm it trained and evaluated is kept: a rerun picks up where it stopped."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def log(msg: str) -> None:
    print(f"[compare] {msg}", flush=True)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", default="runs/demo", help="The output folder of a finished `make demo`.")
    ap.add_argument("--model", default="smollm2", help="The demo's model.")
    ap.add_argument("--out", default="runs/compare", help="Where the arms' adapters and the table go.")
    a = ap.parse_args(argv)

    from trace_envs.evaluation import evaluate
    from trace_envs.pipeline import Pipeline
    from trace_envs.run_config import demo_config
    from trace_envs.training import training

    demo = Path(a.demo)
    report = json.loads((demo / "eval" / "report.json").read_text())
    pipeline = Pipeline(demo_config(out=str(demo), model=a.model))
    pipeline.register_envs()
    evals = pipeline.cfg.eval.model_dump()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    train_grpo = training().train_grpo
    rows: list[dict] = []
    for env_id in pipeline.env_ids():
        name = env_id.split("/", 1)[1]
        warm = pipeline.train_config(env_id)
        rollouts = warm.steps * warm.num_generations
        for arm, fraction in (("GRPO", 0.0), ("GRPO + hints", warm.hint_fraction)):
            cfg = warm.replace(warm_start=False, hint_fraction=fraction, out=str(out / arm.replace(" + ", "-")))
            marker = Path(cfg.out) / f"{name}.json"
            if not marker.is_file():
                log(f"{env_id}: {arm}, {warm.steps} steps of {warm.num_generations} rollouts")
                t0 = time.perf_counter()
                result = train_grpo(cfg)
                marker.write_text(json.dumps({"informative": result.informative, "rewards": result.rewards,
                                              "seconds": round(time.perf_counter() - t0, 1)}) + "\n")
            trained = json.loads(marker.read_text())
            if "success" not in trained:
                log(f"{env_id}: {arm}, evaluating")
                ev = evaluate(env_id, f"hf:{pipeline.model}+{Path(cfg.out) / name}", progress=True, **evals)
                trained.update(success=ev.success_rate, mean_reward=ev.mean_reward)
                marker.write_text(json.dumps(trained) + "\n")
            rows.append({"capability": name, "arm": arm, "rollouts": rollouts, "hint_fraction": fraction,
                         "informative_group_share": _mean(trained["informative"]),
                         "success": trained["success"], "mean_reward": trained["mean_reward"]})
        demo_train = json.loads((demo / "train" / f"{name}.json").read_text())
        rows.append({"capability": name, "arm": "warm start + GRPO + hints (the demo's)", "rollouts": rollouts,
                     "hint_fraction": demo_train.get("hint_fraction"),
                     "informative_group_share": demo_train.get("informative_group_share"),
                     "success": report[env_id]["after"]["success_rate"],
                     "mean_reward": report[env_id]["after"]["mean_reward"]})
        log(f"{env_id}: Arrow over the demo's adapters, evaluating")
        ev = evaluate(env_id, f"routed:{pipeline.model}+{demo / 'adapters'}", progress=True,
                      **{**evals, "routing": "arrow"})
        rows.append({"capability": name, "arm": "Arrow over both adapters (token-level routing)", "rollouts": None,
                     "hint_fraction": None, "informative_group_share": None,
                     "success": ev.success_rate, "mean_reward": ev.mean_reward})
    seeds = f"{evals['episodes']} held-out seeds from {evals['seed_offset']}"
    lines = [f"| capability | arm | GRPO rollouts | hinted share | groups with varied rewards | success on {seeds} "
             "| mean reward |", "|---|---|---|---|---|---|---|"]
    lines += [f"| `{r['capability']}` | {r['arm']} | {r['rollouts'] or '-'} | {_fmt(r['hint_fraction'])} | "
              f"{_fmt(r['informative_group_share'])} | {_fmt(r['success'])} | {_fmt(r['mean_reward'])} |" for r in rows]
    (out / "compare.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "compare.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
