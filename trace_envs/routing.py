"""Routing: pick the capability adapter that fits a task, from the task's opening (system prompt + first user message).

Two methods:
- `LexicalRouter`: Bernoulli naive Bayes over words and word pairs of each capability's description and the openings of the
  runs it was mined from; no model.
- `ModelRouter`: the base model reads the capability descriptions as labelled options (A, B, ... plus "none") and the
  most likely label wins, as in the TRACE paper. Needs the `train` extra (torch, transformers).
"""

from __future__ import annotations

import json
import math
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the and or of to for in on at by with from is are was were be been it this that i you we my your our me "
    "please can could would like want need hi hello thanks thank help".split()
)


def tokenize(text: str) -> list[str]:
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP or tok.isdigit():
            continue
        out.append(tok[:-1] if len(tok) > 4 and tok.endswith("s") else tok)
    return out


class RouteCandidate(BaseModel):
    """One capability a task can be routed to."""

    name: str
    description: str
    examples: list[str] = Field(default_factory=list, description="Openings of tasks that needed this capability.")
    adapter: str | None = Field(default=None, description="Path of the trained adapter, when there is one.")


class RouteDecision(BaseModel):
    choice: str | None = Field(description="Capability name, or None for the base model.")
    scores: dict[str, float]
    method: str


def _features(text: str) -> Counter:
    toks = [t for t in tokenize(text) if not any(ch.isdigit() for ch in t)]
    return Counter(toks + [f"{a}_{b}" for a, b in zip(toks, toks[1:])])


@dataclass
class LexicalRouter:
    """Bernoulli naive Bayes over words and word pairs: each candidate is a class whose examples are its description
    and the openings of the runs that lacked it. Words spread evenly over the classes (names, greetings) cancel out;
    words typical of one class decide, and so does their absence (a task without a second request does not look like
    the multi-request class). Scores are posterior probabilities; below `min_score` nothing fits and the base model is
    used. Needs no model; deterministic."""

    candidates: list[RouteCandidate]
    min_score: float = 0.0
    none_examples: list[str] = field(default_factory=list)
    alpha: float = 0.5
    _present: list[dict[str, float]] = field(default_factory=list, init=False)
    _absent_total: list[float] = field(default_factory=list, init=False)
    _absent: list[dict[str, float]] = field(default_factory=list, init=False)
    _floor: list[tuple[float, float]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        # Openings of tasks none of the candidates fit form one more class, "none": routing there means the base model.
        self._names: list[str | None] = [c.name for c in self.candidates] + ([None] if self.none_examples else [])
        docs_per_class = [[set(_features(t)) for t in [c.description, *c.examples]] for c in self.candidates]
        if self.none_examples:
            docs_per_class.append([set(_features(t)) for t in self.none_examples])
        self._vocab = set().union(*(d for docs in docs_per_class for d in docs)) if docs_per_class else set()
        for docs in docs_per_class:
            n = len(docs)
            df: Counter = Counter()
            for d in docs:
                df.update(d)
            unseen = self.alpha / (n + 2 * self.alpha)
            present = {f: math.log((df[f] + self.alpha) / (n + 2 * self.alpha)) for f in df}
            absent = {f: math.log(1 - (df[f] + self.alpha) / (n + 2 * self.alpha)) for f in df}
            # Sum of log(1 - p) over the whole vocabulary, so a query only adjusts the features it contains.
            absent_total = sum(absent.values()) + (len(self._vocab) - len(df)) * math.log(1 - unseen)
            self._present.append(present)
            self._absent.append(absent)
            self._absent_total.append(absent_total)
            self._floor.append((math.log(unseen), math.log(1 - unseen)))

    def scores(self, text: str) -> dict[str, float]:
        if not self.candidates:
            return {}
        feats = {f for f in _features(text) if f in self._vocab}
        logits = []
        for present, absent, total, (lp0, la0) in zip(self._present, self._absent, self._absent_total, self._floor):
            logits.append(total + sum(present.get(f, lp0) - absent.get(f, la0) for f in feats))
        top = max(logits)
        weights = [math.exp(x - top) for x in logits]
        z = sum(weights)
        return {name or "none": round(w / z, 4) for name, w in zip(self._names, weights)}

    def route(self, text: str) -> RouteDecision:
        scores = self.scores(text)
        best = max(scores, key=lambda k: (scores[k], k), default=None)
        choice = best if best not in (None, "none") and scores[best] >= self.min_score else None
        return RouteDecision(choice=choice, scores=scores, method="lexical")


LABELS = string.ascii_uppercase


def options_prompt(candidates: list[RouteCandidate], task: str) -> tuple[str, list[str]]:
    """The multiple-choice prompt the model router scores, and the label of each option (the last one is 'none')."""
    labels = [LABELS[i] for i in range(len(candidates) + 1)]
    lines = [
        "A customer-service agent is about to handle the task below. Which skill does it need most?",
        "",
        f"Task:\n{task.strip()[:2000]}",
        "",
        "Options:",
    ]
    for label, cand in zip(labels, candidates):
        lines.append(f"{label}. {cand.description.strip()[:400]}")
    lines.append(f"{labels[-1]}. None of the above.")
    lines += ["", "Answer with the letter of one option.", "Answer:"]
    return "\n".join(lines), labels


@dataclass
class ModelRouter:
    """Scores each option label's next-token log-probability under a causal LM (any transformers model)."""

    candidates: list[RouteCandidate]
    model: Any
    tokenizer: Any

    def scores(self, text: str) -> dict[str, float]:
        import torch

        prompt, labels = options_prompt(self.candidates, text)
        if getattr(self.tokenizer, "chat_template", None):
            prompt = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        ids = self.tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            logits = self.model(input_ids=ids.to(self.model.device)).logits[0, -1].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        names = [c.name for c in self.candidates] + ["none"]
        out = {}
        for name, label in zip(names, labels):
            variants = {label, f" {label}"}
            token_ids = {tid for v in variants for tid in self.tokenizer.encode(v, add_special_tokens=False)[:1]}
            out[name] = round(float(torch.logsumexp(logprobs[list(token_ids)], dim=0)), 4)
        return out

    def route(self, text: str) -> RouteDecision:
        scores = self.scores(text)
        best = max(scores, key=lambda k: scores[k])
        return RouteDecision(choice=None if best == "none" else best, scores=scores, method="model")


ROUTER_FILE = "router.json"
MAX_EXAMPLES = 20


def candidates_from_specs(specs: list[Any], openings: dict[str, str], adapters: dict[str, str] | None = None) -> list[RouteCandidate]:
    """Router candidates from mined specs: each spec's description plus the openings (first user messages, from
    `openings` by run id) of the failed runs that lacked it, and its adapter path when one was trained."""
    out = []
    for spec in specs:
        runs = list(spec.evidence.lacking_failed)[:MAX_EXAMPLES]
        examples = [openings[r] for r in runs if r in openings]
        out.append(
            RouteCandidate(
                name=spec.name,
                description=spec.description,
                examples=examples,
                adapter=(adapters or {}).get(spec.name),
            )
        )
    return out


def uncovered_openings(selected: list[Any], others: list[Any], openings: dict[str, str]) -> list[str]:
    """Openings of failed runs that lacked a capability left out of routing (`others`) and none of the `selected`:
    tasks whose fix is not among the adapters, so the base model should take them."""
    covered = {rid for s in selected for rid in s.evidence.lacking_failed}
    ids = [rid for s in others for rid in s.evidence.lacking_failed if rid not in covered]
    return [openings[rid] for rid in dict.fromkeys(ids) if rid in openings]


def accuracy(router: Any, tasks: list[tuple[str, set[str | None]]]) -> float:
    """Share of tasks (opening, acceptable choices) the router gets right."""
    if not tasks:
        return 0.0
    return sum(router.route(text).choice in ok for text, ok in tasks) / len(tasks)


class RouterIndex(BaseModel):
    """What `route` needs, saved beside the adapters: one candidate per capability with its adapter path, and openings
    of tasks none of them fits (the "none" class: use the base model)."""

    candidates: list[RouteCandidate]
    none_examples: list[str] = Field(default_factory=list)
    min_score: float = 0.0

    def router(self) -> LexicalRouter:
        return LexicalRouter(self.candidates, min_score=self.min_score, none_examples=self.none_examples)


def load_index(adapters_dir: str | Path) -> RouterIndex:
    """Read `router.json` from an adapters folder (the pipeline writes it), else build one from the adapters found
    there (`trace_adapter.json` names the capability) and the registered envs' specs."""
    root = Path(adapters_dir)
    index_file = root / ROUTER_FILE
    if index_file.is_file():
        return RouterIndex.model_validate_json(index_file.read_text())
    from trace_envs.registry import discover

    specs = discover()
    candidates = []
    for meta_file in sorted(root.glob("*/trace_adapter.json")):
        meta = json.loads(meta_file.read_text())
        name = str(meta.get("capability") or meta.get("env_id", "").removeprefix("trace/"))
        spec_file = specs[name].parent / "spec.json" if name in specs else None
        description = json.loads(spec_file.read_text()).get("description", name) if spec_file else name
        candidates.append(RouteCandidate(name=name, description=description, adapter=str(meta_file.parent)))
    if not candidates:
        raise FileNotFoundError(f"{root}: no {ROUTER_FILE} and no adapters (*/trace_adapter.json) found")
    return RouterIndex(candidates=candidates)


def save_index(index: RouterIndex, adapters_dir: str | Path) -> Path:
    from trace_envs.atomic import write_text_atomic

    return write_text_atomic(Path(adapters_dir) / ROUTER_FILE, index.model_dump_json(indent=2) + "\n")
