"""Compare the routers on fresh planted tasks with SmolLM2-135M, one task at a time, printing running accuracies:
the model router raw and calibrated against a content-free task (one forward pass serves both), and the retrieval
router by its neighbours' votes (k=4, a memory of PER openings per capability, embedded by the base model).

    python scripts/route_compare.py [N_TASKS=30] [PER=4]

Mines 2,000 planted runs (seed 0), draws 500 fresh tasks (seed 1000), shuffles them (Random(0)) and routes the first
N. A SmolLM2 forward pass over the routing prompt takes 25-40 s on a loaded 2-core CPU: keep N small there."""

from __future__ import annotations

import random
import sys
import time

import torch

from adapters_train.models import load_smollm2
from trace_envs.datasets.planted import generate_planted
from trace_envs.mining.pipeline import mine
from trace_envs.routing import LexicalRouter, ModelRouter, RetrievalRouter, accuracy, candidates_from_specs
from trace_envs.routing.candidates import RouteCandidate
from trace_envs.routing.planted import planted_tasks


def main(n: int = 30, per: int = 4) -> None:
    torch.set_num_threads(2)
    train = generate_planted(2000, 0)
    specs = mine(train).capabilities
    cands = candidates_from_specs(specs, {r.run_id: r.first_user_message() for r in train})
    tasks = planted_tasks(specs, 500, seed=1000)
    random.Random(0).shuffle(tasks)
    tasks = tasks[:n]
    chance = sum(len(ok) for _, ok in tasks) / len(tasks) / (len(cands) + 1)
    print(f"tasks {n}, chance {chance:.3f}, lexical {accuracy(LexicalRouter(cands), tasks):.3f}", flush=True)
    loaded = load_smollm2()
    small = [RouteCandidate(**{**c.model_dump(), "examples": c.examples[:per]}) for c in cands]
    t0 = time.time()
    retrieval = RetrievalRouter(small, loaded.model, loaded.tokenizer, lm_weight=0.0, k=4)
    print(f"retrieval memory {len(retrieval.memory)} openings, embedded in {time.time() - t0:.0f} s", flush=True)
    model = ModelRouter(cands, loaded.model, loaded.tokenizer)
    prior = model.raw_scores("N/A")
    hits = {"model raw": 0, "model calibrated": 0, "retrieval": 0}
    for i, (text, ok) in enumerate(tasks, 1):
        hits["retrieval"] += retrieval.route(text).choice in ok
        raw = model.raw_scores(text)
        hits["model raw"] += _pick(raw) in ok
        hits["model calibrated"] += _pick({k: raw[k] - prior[k] for k in raw}) in ok
        print(i, {k: round(v / i, 3) for k, v in hits.items()}, f"{time.time() - t0:.0f} s", flush=True)


def _pick(scores: dict[str, float]) -> str | None:
    best = max(scores, key=lambda k: scores[k])
    return None if best == "none" else best


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
