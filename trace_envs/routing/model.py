"""The model router, as in the TRACE paper: the base model reads the capability descriptions as labelled options
(A, B, ... plus "none") and the most likely label wins. Needs the `train` extra (torch, transformers).

Each label's log-probability is calibrated against the same options shown with a content-free task ("N/A"): a small
model prefers some letters whatever the task says (SmolLM2-135M gives "A" about 2 nats more than any other letter on
the content-free task), so uncalibrated it answers the first option for most tasks and scores below chance. The score
of a label is how much the task raises its log-probability over that prior (Zhao et al., 2021)."""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from trace_envs.routing.candidates import RouteCandidate, RouteDecision
from trace_envs.routing.scoring import CONTENT_FREE

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
    """Scores each option label's next-token log-probability under a causal LM (any transformers model), minus its
    log-probability for a content-free task (`calibrate=False`: the raw log-probabilities)."""

    candidates: list[RouteCandidate]
    model: Any
    tokenizer: Any
    calibrate: bool = True

    def __post_init__(self) -> None:
        self._prior: dict[str, float] | None = None

    def scores(self, text: str) -> dict[str, float]:
        raw = self.raw_scores(text)
        if not self.calibrate:
            return raw
        if self._prior is None:
            self._prior = self.raw_scores(CONTENT_FREE)
        return {name: round(raw[name] - self._prior[name], 4) for name in raw}

    def raw_scores(self, text: str) -> dict[str, float]:
        """Each option's label log-probability as the next token after the prompt."""
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
