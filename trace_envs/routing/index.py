"""The router index saved beside the adapters (`router.json`): the candidates, each with its adapter path, and the
openings no candidate fits; read back by `route`, the routed policy and `run`."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from trace_envs.routing.candidates import RouteCandidate
from trace_envs.routing.lexical import LexicalRouter

ROUTER_FILE = "router.json"


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
