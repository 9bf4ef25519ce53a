"""Selection with the paper's statistics, vectorised over an int8 label matrix (runs x candidates).

LF = lacking & failed, PF = present & failed, LP = lacking & passed, PP = present & passed (NA excluded);
Cov = LF / failed runs, ER- = LF / (LF + PF), ER+ = LP / (LP + PP), Delta = ER- - ER+ (0 when undefined).
A candidate is kept when Cov >= rho and Delta >= delta over all the runs, and its contrast holds in at least K of N
bootstrap resamples of the runs (with replacement, seeded): Delta >= delta, and Cov at least RESAMPLED_COV of rho. The
resamples ask whether the contrast is an accident of which runs were drawn; they do not apply the Cov floor again,
since a share just above it falls below it in about half of any resamples (22 of 189 failed runs, Cov 0.116, with
Delta 1.00, was kept by 6 of 10 and dropped). Near-duplicates (same family and tools, or label vectors agreeing on
>= `dup_agreement` of the runs either applies to) are merged into the one with the higher Delta, and a candidate of a
family that another eligible one's family refines (over the same tools, lacking in most of the same failed runs) into
that one; ranked by Delta.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_envs.mining.detector import get_detector
from trace_envs.mining.label import LACKING, PRESENT
from trace_envs.mining.options import SelectOptions


@dataclass
class Stats:
    lf: np.ndarray
    pf: np.ndarray
    lp: np.ndarray
    pp: np.ndarray
    n_failed: float
    cov: np.ndarray
    er_minus: np.ndarray
    er_plus: np.ndarray
    delta: np.ndarray


@dataclass
class Selection:
    stats: Stats
    passes: np.ndarray
    passed_full: np.ndarray
    kept: list[int]
    status: list[str]
    """Per candidate: 'kept', or why not (thresholds, resamples, 'merged into <name>', 'never applies')."""
    options: SelectOptions = field(default_factory=SelectOptions)


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a, dtype=float)
    np.divide(a, b, out=out, where=b > 0)
    return out


def compute_stats(labels: np.ndarray, failed: np.ndarray, weights: np.ndarray | None = None) -> Stats:
    """Statistics per candidate; `weights` (per run counts, for a bootstrap resample) default to 1."""
    f = failed.astype(bool)
    w = np.ones(labels.shape[0], dtype=np.float64) if weights is None else weights.astype(np.float64)
    lack = labels == LACKING
    pres = labels == PRESENT
    wf = w * f
    wp = w * ~f
    lf = wf @ lack
    pf = wf @ pres
    lp = wp @ lack
    pp = wp @ pres
    n_failed = float(wf.sum())
    cov = lf / n_failed if n_failed > 0 else np.zeros(labels.shape[1])
    er_m = _ratio(lf, lf + pf)
    er_p = _ratio(lp, lp + pp)
    defined = ((lf + pf) > 0) & ((lp + pp) > 0)
    delta = np.where(defined, er_m - er_p, 0.0)
    return Stats(lf, pf, lp, pp, n_failed, cov, er_m, er_p, delta)


FINER_EXPLAINS = 0.8
"""Share of a coarser candidate's lacking failed runs a finer family's candidate must also find lacking to replace it."""


def _explains(finer: np.ndarray, coarser: np.ndarray) -> bool:
    return bool((finer & coarser).sum() >= FINER_EXPLAINS * coarser.sum())


def _passing(s: Stats, o: SelectOptions) -> np.ndarray:
    return (s.cov >= o.rho - 1e-12) & (s.delta >= o.delta - 1e-12)


RESAMPLED_COV = 0.5
"""Share of rho a resample's Cov must reach: the failing is still there in the resample, not gone."""


def _stable(s: Stats, o: SelectOptions) -> np.ndarray:
    return (s.cov >= o.rho * RESAMPLED_COV - 1e-12) & (s.delta >= o.delta - 1e-12)


def select(labels: np.ndarray, failed: np.ndarray, families_tools: list[tuple[str, tuple[str, ...]]],
           names: list[str], options: SelectOptions | None = None) -> Selection:
    """Apply thresholds, bootstrap, dedup and ranking. `families_tools[j]` is candidate j's (family, role tools)."""
    o = options or SelectOptions()
    n_runs, n_c = labels.shape
    full = compute_stats(labels, failed)
    passed_full = _passing(full, o)
    rng = np.random.default_rng(o.seed)
    passes = np.zeros(n_c, dtype=np.int64)
    for _ in range(o.n):
        idx = rng.integers(0, n_runs, n_runs) if n_runs else np.zeros(0, dtype=np.int64)
        w = np.bincount(idx, minlength=n_runs)
        passes += _stable(compute_stats(labels, failed, w), o)
    status: list[str] = []
    eligible: list[int] = []
    applies = (labels != 0).any(axis=0)
    for j in range(n_c):
        if not applies[j]:
            status.append("never applies (NA on every run)")
        elif passes[j] >= o.k and passed_full[j]:
            status.append("eligible")
            eligible.append(j)
        else:
            why = []
            if full.cov[j] < o.rho:
                why.append(f"Cov {full.cov[j]:.2f} < {o.rho}")
            if full.delta[j] < o.delta:
                why.append(f"Delta {full.delta[j]:.2f} < {o.delta}")
            if passes[j] < o.k:
                why.append(f"contrast held in {passes[j]}/{o.n} resamples < {o.k}")
            status.append("; ".join(why))
    # by Delta (to 0.01), then the more specific family first: a completion check restates the outcome, so on a tie
    # a near-duplicate of a specific capability (grounding, confirmation, ...) is merged into the specific one; then
    # the one binding more tools (the wrong branch of a conditional request is also an unwarranted write, and the
    # capability that names the read and both branches says more of what went wrong)
    order = sorted(eligible, key=lambda j: (-round(float(full.delta[j]), 2), _generic(families_tools[j][0]),
                                            -full.cov[j], -len(families_tools[j][1]), names[j]))
    # a coarser family's candidate over the tools of an eligible candidate of a family that refines it says less, where
    # the finer one explains the same failed runs (a claim some users make is no refusal every failing agent skipped)
    lacking_failed = (labels == LACKING) & failed.astype(bool)[:, None]
    finer = {j: i for j in eligible for i in eligible
             if _refines(families_tools[i][0], families_tools[j][0])
             and set(families_tools[j][1]) <= set(families_tools[i][1])
             and _explains(lacking_failed[:, i], lacking_failed[:, j])}
    kept: list[int] = []
    for j in order:
        if j in finer:
            status[j] = f"merged into {names[finer[j]]} (a finer family over the same tools)"
            continue
        dup = None
        for i in kept:
            if families_tools[i] == families_tools[j]:
                dup = i
                break
            either = (labels[:, i] != 0) | (labels[:, j] != 0)
            m = int(either.sum())
            if m and float((labels[either, i] == labels[either, j]).sum()) / m >= o.dup_agreement:
                dup = i
                break
        if dup is None:
            kept.append(j)
            status[j] = "kept"
        else:
            status[j] = f"merged into {names[dup]} (near-duplicate, lower or equal Delta)"
    return Selection(stats=full, passes=passes, passed_full=passed_full, kept=kept, status=status, options=o)


def summary_rows(sel: Selection, names: list[str]) -> list[dict[str, Any]]:
    s = sel.stats
    return [
        {
            "name": names[j],
            "cov": round(float(s.cov[j]), 4),
            "delta": round(float(s.delta[j]), 4),
            "er_minus": round(float(s.er_minus[j]), 4),
            "er_plus": round(float(s.er_plus[j]), 4),
            "lf": int(s.lf[j]), "pf": int(s.pf[j]), "lp": int(s.lp[j]), "pp": int(s.pp[j]),
            "passes": int(sel.passes[j]),
            "resamples": sel.options.n,
            "kept": sel.status[j] == "kept",
            "status": sel.status[j],
        }
        for j in range(len(names))
    ]


def _refines(fine: str, coarse: str) -> bool:
    try:
        return coarse in get_detector(fine).refines
    except ValueError:
        return False


def _generic(detector: str) -> int:
    """1 for a detector whose labels restate the outcome (ranked after specific ones), 0 otherwise or when unknown."""
    try:
        return int(get_detector(detector).generic)
    except ValueError:
        return 0
