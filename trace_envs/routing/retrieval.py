"""The retrieval router, as in the TRACE paper: embed the task's opening with the base model itself (mean-pooled
hidden states; no other model to fetch), retrieve the k most similar mined runs (each labelled by the capabilities
it lacked, or "base" when it lacked none of them), let the base model score those capability labels plus "base", and
keep the capabilities whose score clears a threshold, with weights for merging their adapters once per task
(`weights` of the decision; the routed policy merges them with PEFT's `add_weighted_adapter`). Needs the `train`
extra (torch, transformers)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trace_envs.routing.candidates import RouteCandidate, RouteDecision
from trace_envs.routing.scoring import CONTENT_FREE, chat_prompt, embed, label_logprobs

BASE = "base"


def label_prompt(task: str, options: list[tuple[str, str]]) -> str:
    """The question the base model answers by a label: which of the retrieved skills the task needs."""
    lines = ["A customer-service agent is about to handle the task below. Which skill does it need most?", "",
             f"Task:\n{task.strip()[:2000]}", "", "Skills:"]
    lines += [f"- {name}: {text.strip()[:300]}" for name, text in options]
    lines += ["", "Answer with the name of one skill."]
    return "\n".join(lines)


@dataclass
class RetrievalRouter:
    """k-nearest mined runs by the base model's embedding, then the base model's label scores over what they lacked.

    `memory`: (opening, capabilities it lacked) pairs, the candidates' examples and the uncovered openings (labelled
    base) by default. A label's score is the similarity-weighted vote of the k neighbours (softmax over cosine
    similarity at `temperature`) times the base model's calibrated label probability, renormalised; with
    `lm_weight` 0 the vote alone decides. Capabilities at or above `threshold` are kept, weighted by their share."""

    candidates: list[RouteCandidate]
    model: Any
    tokenizer: Any
    none_examples: list[str] = field(default_factory=list)
    k: int = 8
    threshold: float = 0.3
    temperature: float = 0.05
    lm_weight: float = 1.0
    memory: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.memory:
            lacked: dict[str, set[str]] = {}
            for cand in self.candidates:
                for text in cand.examples:
                    lacked.setdefault(text, set()).add(cand.name)
            self.memory = [(t, frozenset(names)) for t, names in lacked.items()]
            self.memory += [(t, frozenset({BASE})) for t in self.none_examples if t not in lacked]
        self._described = {c.name: c.description for c in self.candidates}
        self._vectors = embed(self.model, self.tokenizer, [t for t, _ in self.memory]) if self.memory else None
        self._prior: dict[tuple[str, ...], list[float]] = {}

    def neighbours(self, text: str) -> list[tuple[float, frozenset[str]]]:
        """The k most similar memory runs: (cosine similarity, the capabilities it lacked)."""
        if self._vectors is None or not len(self._vectors):
            return []
        query = embed(self.model, self.tokenizer, [text])[0]
        sims = self._vectors @ query
        top = sims.topk(min(self.k, len(self.memory)))
        return [(float(s), self.memory[int(i)][1]) for s, i in zip(top.values, top.indices)]

    def votes(self, text: str) -> dict[str, float]:
        near = self.neighbours(text)
        if not near:
            return {BASE: 1.0}
        top = max(s for s, _ in near)
        weights = [math.exp((s - top) / self.temperature) for s, _ in near]
        out: dict[str, float] = {}
        for w, (_, names) in zip(weights, near):
            for name in names:
                out[name] = out.get(name, 0.0) + w / len(names)
        z = sum(out.values())
        return {name: v / z for name, v in out.items()}

    def _lm_probs(self, text: str, labels: list[str]) -> dict[str, float]:
        options = [(name, self._described.get(name, "the task needs no particular skill")) for name in labels]
        prompt = chat_prompt(self.tokenizer, label_prompt(text, options))
        words = [name.replace("_", " ") for name in labels]
        key = tuple(labels)
        if key not in self._prior:
            empty = chat_prompt(self.tokenizer, label_prompt(CONTENT_FREE, options))
            self._prior[key] = label_logprobs(self.model, self.tokenizer, empty, words)
        raw = label_logprobs(self.model, self.tokenizer, prompt, words)
        logits = [r - p for r, p in zip(raw, self._prior[key])]
        top = max(logits)
        exp = [math.exp(x - top) for x in logits]
        return {name: e / sum(exp) for name, e in zip(labels, exp)}

    def scores(self, text: str) -> dict[str, float]:
        votes = self.votes(text)
        labels = sorted(set(votes) | {BASE})
        if self.lm_weight and len(labels) > 1:
            lm = self._lm_probs(text, labels)
            combined = {n: votes.get(n, 0.0) * lm[n] ** self.lm_weight for n in labels}
        else:
            combined = {n: votes.get(n, 0.0) for n in labels}
        z = sum(combined.values()) or 1.0
        return {n: round(v / z, 4) for n, v in combined.items()}

    def route(self, text: str) -> RouteDecision:
        scores = self.scores(text)
        kept = {n: s for n, s in scores.items() if n != BASE and s >= self.threshold}
        if not kept or scores.get(BASE, 0.0) > max(kept.values()):
            return RouteDecision(choice=None, scores=scores, method="retrieval", weights={})
        total = sum(kept.values())
        weights = {n: round(s / total, 4) for n, s in sorted(kept.items(), key=lambda kv: -kv[1])}
        return RouteDecision(choice=next(iter(weights)), scores=scores, method="retrieval", weights=weights)
