"""Bundled data sets: the planted-deficit simulator (the miner's ground truth)."""

from trace_envs.datasets.planted import (
    DECOYS,
    PLANTED_DEFICITS,
    generate_planted,
    iter_planted,
    match_deficit,
    score_recovery,
    write_jsonl,
)

__all__ = [
    "DECOYS", "PLANTED_DEFICITS", "generate_planted", "iter_planted", "match_deficit", "score_recovery", "write_jsonl"
]
