"""The bundled planted domains under one interface, for the benchmarks and tests that run over all of them.

Each has `name`, `deficits`, `decoys`, `rules`, `generate(n, seed)`, `iter_runs(n, seed)`, `match_deficit(family,
tools)`, `score_recovery(kept)` and `policy_agent(deficits)`: the help-desk domain is a `PlantedDomain`; the retail
one keeps its own module functions, which `RetailPlanted` presents the same way.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from trace_envs.datasets import helpdesk, planted
from trace_envs.trajectories.models import Run


class RetailPlanted:
    """The retail planted set (`trace_envs.datasets.planted`) with a `PlantedDomain`'s interface."""

    name = "retail"

    @property
    def deficits(self) -> dict[str, Any]:
        return planted.PLANTED_DEFICITS

    @property
    def decoys(self) -> dict[str, Any]:
        return planted.DECOYS

    @property
    def rules(self) -> Any:
        return planted.PLANTED_RULES

    def generate(self, n_runs: int, seed: int = 0, **kwargs: Any) -> list[Run]:
        return planted.generate_planted(n_runs, seed, **kwargs)

    def iter_runs(self, n_runs: int, seed: int = 0, **kwargs: Any) -> Iterator[Run]:
        return planted.iter_planted(n_runs, seed, **kwargs)

    def match_deficit(self, family: str, tools: Iterable[str]) -> str | None:
        return planted.match_deficit(family, tools)

    def score_recovery(self, kept: Iterable[tuple[str, Iterable[str]]]) -> dict[str, Any]:
        return planted.score_recovery(kept)

    def policy_agent(self, deficits: Iterable[str] = ()) -> Callable[[Any, Any, int], str]:
        return planted.planted_policy(deficits)


def planted_domains() -> dict[str, Any]:
    """name -> planted domain, retail first."""
    return {"retail": RetailPlanted(), "helpdesk": helpdesk.DOMAIN}
