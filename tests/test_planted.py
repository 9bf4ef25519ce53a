"""The planted-deficit data set: deterministic, realistic, loadable, and the miner recovers what was planted."""

from __future__ import annotations

import json

import pytest

from trace_envs.datasets.planted import (
    DECOYS,
    PLANTED_DEFICITS,
    generate_planted,
    iter_planted,
    match_deficit,
    score_recovery,
    write_jsonl,
)
from trace_envs.mining.pipeline import mine


def test_deterministic_and_streamable():
    a = generate_planted(50, seed=3)
    b = list(iter_planted(50, seed=3))
    assert [r.model_dump() for r in a] == [r.model_dump() for r in b]
    c = generate_planted(50, seed=4)
    assert [r.messages for r in a] != [r.messages for r in c]


def test_runs_are_realistic_openai_messages():
    runs = generate_planted(200, seed=0)
    assert {r.source for r in runs} == {"planted"}
    assert 0.2 < sum(not r.success for r in runs) / len(runs) < 0.8
    for run in runs:
        assert run.messages[0]["role"] == "system" and run.ground_truth is not None
        ids = set()
        for m in run.messages:
            for tc in m.get("tool_calls") or []:
                json.loads(tc["function"]["arguments"])
                ids.add(tc["id"])
            if m["role"] == "tool":
                assert m["tool_call_id"] in ids
        for call in run.tool_calls:
            assert run.messages[call.message_index]["tool_calls"][0]["id"] == call.id
        truth = run.meta["planted"]
        # a shown deficit or noise fails the run; a decoy alone never does
        assert run.success == (not truth["deficits"] and not truth["noise"])


def test_every_deficit_kind_shows():
    runs = generate_planted(1000, seed=1)
    shown = {d for r in runs for d in r.meta["planted"]["deficits"]}
    assert shown == set(PLANTED_DEFICITS)
    assert len(PLANTED_DEFICITS) >= 5
    assert any(r.meta["planted"]["noise"] for r in runs)
    skipped = [r for r in runs if r.meta["planted"]["skipped_tracking"]]
    # the decoy is skipped about equally often in passed and failed runs
    rate_failed = sum(not r.success for r in skipped) / len(skipped)
    rate_all = sum(not r.success for r in runs) / len(runs)
    assert abs(rate_failed - rate_all) < 0.08


def test_jsonl_round_trip(tmp_path):
    from trace_envs.trajectories.loaders import load_runs

    runs = generate_planted(40, seed=2)
    path = write_jsonl(runs, tmp_path / "planted.jsonl")
    loaded = load_runs([path]).runs
    assert len(loaded) == 40
    assert [r.success for r in loaded] == [r.success for r in runs]
    assert [len(r.ground_truth or []) for r in loaded] == [len(r.ground_truth or []) for r in runs]
    assert loaded[0].tool_calls[0].name == runs[0].tool_calls[0].name


def test_match_deficit():
    assert match_deficit("precondition_before_write", ["get_order_details", "cancel_order"]) == "skip_precondition_read"
    assert match_deficit("precondition_before_write", ["get_order_tracking", "cancel_order"]) in DECOYS
    assert match_deficit("confirmation_before_write", ["cancel_order"]) == "no_confirmation"
    assert match_deficit("information_gathering", ["get_order_details"]) is None


# Eight deficits share the failed runs, and each must carry Cov >= 0.10 of them in 8 of 10 resamples: at the
# benchmark's size (2,000 runs) every seed recovers all eight; at 1,000 sampling noise alone misses one now and then.
RUNS = 2000


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_miner_recovers_planted_deficits(seed):
    res = mine(generate_planted(RUNS, seed=seed))
    s = score_recovery((c.spec.family, c.target_tools()) for c in res.kept)
    assert s["precision"] >= 0.9, s
    assert s["recall"] >= 0.9, s
    assert not s["decoys"] and not s["unmatched"], s


def test_recovery_over_seeds_mean():
    ps, rs = [], []
    for seed in range(10, 16):
        res = mine(generate_planted(RUNS, seed=seed))
        s = score_recovery((c.spec.family, c.target_tools()) for c in res.kept)
        ps.append(s["precision"])
        rs.append(s["recall"])
        assert not s["decoys"]
    assert sum(ps) / len(ps) >= 0.9 and sum(rs) / len(rs) >= 0.9
