"""Router accuracy on planted-deficit tasks whose true capabilities are known.

The lexical router (floor: 90%) beside the model router, which has the base model score the capability descriptions as
labelled options (as in the paper; raw and calibrated against a content-free task), and the retrieval router (the
nearest mined runs by the base model's embedding, their labels scored by the base model): `tiny` (a random model, the
floor any real model must beat) and SmolLM2-135M-Instruct when `make model` has fetched it. No floor for the model
routers on a 135M model. `TRACE_BENCH_ROUTE_TASKS` tasks each (default 100; a SmolLM2 forward pass over a routing
prompt takes seconds on a CPU).
"""

from __future__ import annotations

import os
import time

from trace_envs.datasets.planted import generate_planted
from trace_envs.mining.pipeline import mine
from trace_envs.routing import LexicalRouter, ModelRouter, RetrievalRouter, accuracy, candidates_from_specs
from trace_envs.routing.planted import planted_tasks

TRAIN_RUNS = 2000
LEXICAL_TASKS = 500
MODEL_TASKS = int(os.environ.get("TRACE_BENCH_ROUTE_TASKS", "100"))


def run(train_runs: int = TRAIN_RUNS, lexical_tasks: int = LEXICAL_TASKS, model_tasks: int = MODEL_TASKS,
        models: tuple[str, ...] = ("tiny", "smollm2")) -> list[str]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    train = generate_planted(train_runs, 0)
    specs = mine(train).capabilities
    candidates = candidates_from_specs(specs, {r.run_id: r.first_user_message() for r in train})
    lines = [f"{len(specs)} capabilities mined from {train_runs} planted runs; fresh tasks from other seeds"]
    tasks = planted_tasks(specs, lexical_tasks, seed=1000)
    t0 = time.perf_counter()
    acc = accuracy(LexicalRouter(candidates), tasks)
    per_task = (time.perf_counter() - t0) / len(tasks) * 1e3
    lines.append(f"lexical (naive Bayes): accuracy {acc:.3f} on {len(tasks)} tasks, {per_task:.2f} ms/task "
                 f"(floor >= 0.90) {'PASS' if acc >= 0.9 else 'FAIL'}")
    from adapters_train.models import SMOLLM2_FILE, build_tiny, cache_dir, load_smollm2

    routed = tasks[:model_tasks]
    chance = sum(len(ok) for _, ok in routed) / len(routed) / (len(candidates) + 1)
    for name, load in (("tiny", build_tiny), ("smollm2", load_smollm2)):
        if name not in models:
            continue
        if name == "smollm2" and not (cache_dir() / "smollm2" / SMOLLM2_FILE).is_file():
            lines.append("model router (smollm2): skipped, run `make model` first")
            continue
        loaded = load()
        raw = ModelRouter(candidates, loaded.model, loaded.tokenizer)
        hits_raw = hits_cal = 0
        t0 = time.perf_counter()
        prior = raw.raw_scores("N/A")
        for text, ok in routed:  # one forward pass per task serves both readings
            scores = raw.raw_scores(text)
            calibrated = {n: scores[n] - prior[n] for n in scores}
            hits_raw += _pick(scores) in ok
            hits_cal += _pick(calibrated) in ok
        per_task = (time.perf_counter() - t0) / len(routed)
        lines.append(f"model router ({name}): accuracy {hits_cal / len(routed):.3f} calibrated, "
                     f"{hits_raw / len(routed):.3f} raw, on {len(routed)} tasks, {per_task:.2f} s/task "
                     f"(chance {chance:.3f}; no floor)")
        for lm_weight in (0.0, 1.0):
            t0 = time.perf_counter()
            router = RetrievalRouter(candidates, loaded.model, loaded.tokenizer, lm_weight=lm_weight)
            acc = accuracy(router, routed)
            per_task = (time.perf_counter() - t0) / len(routed)
            how = "votes and the base model's label scores" if lm_weight else "neighbours' votes only"
            lines.append(f"retrieval router ({name}, {how}): accuracy {acc:.3f} on {len(routed)} tasks, "
                         f"{per_task:.2f} s/task with its memory (chance {chance:.3f}; no floor)")
    return lines


def _pick(scores: dict[str, float]) -> str | None:
    best = max(scores, key=lambda k: scores[k])
    return None if best == "none" else best


def smoke() -> list[str]:
    """300 planted runs, 20 tasks for the lexical router, 2 for the tiny model's."""
    return run(train_runs=300, lexical_tasks=20, model_tasks=2, models=("tiny",))


if __name__ == "__main__":
    print("\n".join(run()))
