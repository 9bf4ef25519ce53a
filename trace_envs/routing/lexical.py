"""The lexical router: Bernoulli naive Bayes over the words and word pairs of each capability's description and the
openings of the runs it was mined from; no model, deterministic (the fast fallback)."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from trace_envs.routing.candidates import RouteCandidate, RouteDecision

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
