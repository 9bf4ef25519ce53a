"""Router accuracy on planted-deficit tasks whose true capabilities are known.

The lexical router (floor: 90%) beside the model router, which has the base model score the capability descriptions as
labelled options (as in the paper): `tiny` (a random model, the floor any real model must beat: chance level) and
SmolLM2-135M-Instruct when `make model` has fetched it. No floor for the model router on a 135M model.
"""

from __future__ import annotations

import os
import time

from trace_envs.datasets.planted import generate_planted
from trace_envs.mining.pipeline import mine
from trace_envs.routing import LexicalRouter, ModelRouter, accuracy, candidates_from_specs
from trace_envs.routing.planted import planted_tasks

TRAIN_RUNS = 2000
LEXICAL_TASKS = 500
MODEL_TASKS = int(os.environ.get("TRACE_BENCH_ROUTE_TASKS", "100"))


def run() -> list[str]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    train = generate_planted(TRAIN_RUNS, 0)
    specs = mine(train).capabilities
    candidates = candidates_from_specs(specs, {r.run_id: r.first_user_message() for r in train})
    lines = [f"{len(specs)} capabilities mined from {TRAIN_RUNS} planted runs; fresh tasks from other seeds"]
    tasks = planted_tasks(specs, LEXICAL_TASKS, seed=1000)
    t0 = time.perf_counter()
    acc = accuracy(LexicalRouter(candidates), tasks)
    per_task = (time.perf_counter() - t0) / len(tasks) * 1e3
    lines.append(f"lexical (naive Bayes): accuracy {acc:.3f} on {len(tasks)} tasks, {per_task:.2f} ms/task "
                 f"(floor >= 0.90) {'PASS' if acc >= 0.9 else 'FAIL'}")
    from adapters_train.models import SMOLLM2_FILE, build_tiny, cache_dir, load_smollm2

    model_tasks = tasks[:MODEL_TASKS]
    chance = sum(len(ok) for _, ok in model_tasks) / len(model_tasks) / (len(candidates) + 1)
    for name, load in (("tiny", build_tiny), ("smollm2", load_smollm2)):
        if name == "smollm2" and not (cache_dir() / "smollm2" / SMOLLM2_FILE).is_file():
            lines.append("model router (smollm2): skipped, run `make model` first")
            continue
        loaded = load()
        router = ModelRouter(candidates, loaded.model, loaded.tokenizer)
        t0 = time.perf_counter()
        acc = accuracy(router, model_tasks)
        per_task = (time.perf_counter() - t0) / len(model_tasks)
        lines.append(f"model router ({name}): accuracy {acc:.3f} on {len(model_tasks)} tasks, {per_task:.2f} s/task "
                     f"(chance {chance:.3f}; no floor)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
