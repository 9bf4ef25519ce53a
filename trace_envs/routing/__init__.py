"""Routing: pick the capability adapter that fits a task, from the task's opening (system prompt + first user message).

- `candidates`: what a task can be routed to (`RouteCandidate`, built from mined specs) and a router's answer.
- `lexical`: `LexicalRouter`, Bernoulli naive Bayes over words and word pairs; no model (the fast fallback).
- `model`: `ModelRouter`, the base model scores the capability labels plus "none" (the paper's router; needs the
  `train` extra).
- `retrieval`: `RetrievalRouter`, the paper's router: the k mined runs nearest by the base model's embedding, the
  base model scoring what they lacked plus "base", the capabilities above a threshold kept with merge weights;
  `scoring`: the embeddings and calibrated label log-probabilities both model routers use.
- `index`: `RouterIndex`, saved beside the adapters as `router.json`.
- `accuracy`: how often a router picks an acceptable capability; `planted` measures it on fresh planted-deficit
  tasks (it reads the planted data set and the miner's labels, so it is not imported here).
"""

from trace_envs.routing.accuracy import accuracy
from trace_envs.routing.candidates import RouteCandidate, RouteDecision, candidates_from_specs, uncovered_openings
from trace_envs.routing.index import ROUTER_FILE, RouterIndex, load_index, save_index
from trace_envs.routing.lexical import LexicalRouter, tokenize
from trace_envs.routing.model import ModelRouter, options_prompt
from trace_envs.routing.retrieval import RetrievalRouter

__all__ = [
    "ROUTER_FILE", "LexicalRouter", "ModelRouter", "RetrievalRouter", "RouteCandidate", "RouteDecision", "RouterIndex", "accuracy",
    "candidates_from_specs", "load_index", "options_prompt", "save_index", "tokenize", "uncovered_openings",
]
