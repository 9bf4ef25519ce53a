"""What a task can be routed to (one candidate per capability, with its adapter) and what a router answers; built
from mined specs and the openings of the runs they were mined from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MAX_EXAMPLES = 20


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
    weights: dict[str, float] = Field(default_factory=dict, description="Capabilities kept for a weighted merge of "
                                                                        "their adapters, with their weights (retrieval).")


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
