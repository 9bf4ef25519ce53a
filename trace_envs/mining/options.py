"""The mining options: the selection thresholds (`SelectOptions`, the paper's rho, delta, K of N) and how candidates
are proposed and labelled (`MineOptions`), each knob with its one default and range check. `trace-envs mine` maps its
flags onto them; `trace-envs run` holds `MineOptions` in its `RunConfig`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SelectOptions(BaseModel):
    """Keep a candidate when Cov >= rho and Delta >= delta over all the runs, and its contrast holds (Delta >= delta,
    Cov at least half of rho) in at least K of N bootstrap resamples of the runs (see `trace_envs.mining.select`)."""

    model_config = ConfigDict(extra="forbid")

    rho: float = Field(default=0.10, ge=0.0, le=1.0, description="Minimum Cov: the share of failed runs that lack it.")
    delta: float = Field(default=0.20, ge=-1.0, le=1.0, description="Minimum Delta = ER- - ER+: how much more often "
                                                                    "lacking it goes with failure than with success.")
    k: int = Field(default=8, ge=0, description="Resamples in which a candidate's contrast must hold (K of N).")
    n: int = Field(default=10, ge=1, description="Bootstrap resamples (N).")
    seed: int = Field(default=0, description="Seed of the bootstrap resamples.")
    dup_agreement: float = Field(default=0.95, ge=0.0, le=1.0, description="Label agreement at which two candidates "
                                                                          "are one (the lower Delta is merged).")

    @model_validator(mode="after")
    def _k_of_n(self) -> "SelectOptions":
        if self.k > self.n:
            raise ValueError(f"k ({self.k}) must be at most n ({self.n}): a candidate passes in K of N resamples")
        return self


class MineOptions(SelectOptions):
    """The selection thresholds plus how candidates are proposed and labelled."""

    max_candidates: int | None = Field(default=None, ge=1, description="Cap on candidates (None: all proposed).")
    profile_sample: int = Field(default=5000, ge=1, description="Runs held in memory to build the domain profile, "
                                                                "the contrast groups and the candidates.")
    min_calls: int = Field(default=2, ge=1, description="Calls of a tool before the offline proposer builds on it.")
    examples: int = Field(default=20, ge=0, description="Supporting run ids kept per capability and label.")
    max_pairs: int = Field(default=24, ge=0, description="Contrasting (passed, failed) pairs shown to the LLM "
                                                         "proposer.")
    pairs_per_prompt: int = Field(default=4, ge=1, description="Contrasting pairs per LLM prompt.")
    llm_label_runs: int = Field(default=300, ge=0, description="Runs the LLM labels for a candidate that no check can "
                                                               "label.")
    concurrency: int = Field(default=4, ge=1, description="Parallel LLM requests.")
    check_publish: bool = Field(default=True, description="Validate each kept capability as `generate` will; one whose "
                                "env is refused is not kept (the candidate merged into it that publishes takes its "
                                "place) and the report says why.")
