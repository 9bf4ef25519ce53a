"""The domain randomizer (trace_envs.datasets.randomized): drawn domains are deterministic, cover every value of every
axis over the benchmark's seeds, write every source format the loaders read back run for run, keep truth that matches
their runs, and the `--random` mining benchmark runs end to end."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from trace_envs.datasets.randomized import AXES, FAMILIES, draw_axes, draw_families, random_domain
from trace_envs.datasets.randomized.core import DECOY
from trace_envs.datasets.randomized.naming import Naming
from trace_envs.datasets.randomized.shapes import Shapes
from trace_envs.datasets.randomized.talk import phrasings
from trace_envs.trajectories.loaders import load_runs

BENCH_SEEDS = range(30)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _seed_where(**axes) -> int:
    return next(s for s in BENCH_SEEDS if all(draw_axes(s)[k] == v for k, v in axes.items()))


def test_same_seed_same_bytes_and_another_seed_another_domain(tmp_path):
    seed = _seed_where(source_format="tau2")
    for name in ("a", "b"):
        dom = random_domain(seed)
        dom.write_runs(dom.runs(), tmp_path / name)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    other = random_domain(seed + 1)
    assert other.axes != random_domain(seed).axes
    assert [r.messages for r in other.runs()[:5]] != [r.messages for r in random_domain(seed).runs()[:5]]


def test_a_run_depends_only_on_the_seed_and_its_index():
    dom = random_domain(4)
    runs = dom.runs()
    assert [r.messages for r in dom.generate(7, seed=dom.seed, start=93)] == [r.messages for r in runs[93:100]]


def test_every_axis_value_and_every_family_appears_over_the_benchmark_seeds():
    drawn = [draw_axes(s) for s in BENCH_SEEDS]
    for axis, values in AXES.items():
        assert {d[axis] for d in drawn} == set(values), axis
    families = Counter(f for s in BENCH_SEEDS for f in draw_families(s))
    assert set(families) == set(FAMILIES) and min(families.values()) >= 5, families
    assert {len(draw_families(s)) for s in BENCH_SEEDS} == {4, 5, 6}
    rates = {r for s in BENCH_SEEDS for r in draw_families(s).values()}
    assert len(rates) >= 4


def test_a_source_that_cannot_carry_a_value_overrides_it():
    for s in BENCH_SEEDS:
        a = draw_axes(s)
        if a["source_format"] == "toolsandbox":
            assert (a["error_shape"], a["expected_actions"]) == ("exception", "without") and a["naming"] != "dotted"
        if a["error_shape"] == "flag":
            assert a["source_format"] in ("tau2", "openai-jsonl")


@pytest.mark.parametrize("fmt", AXES["source_format"])
def test_every_format_is_read_back_with_its_runs_outcomes_and_expected_actions(tmp_path, fmt):
    seed = _seed_where(source_format=fmt)
    dom = random_domain(seed)
    runs = dom.runs()
    path = dom.write_runs(runs, tmp_path)
    loaded = load_runs([str(path)])
    assert not loaded.skipped
    truth = json.loads((tmp_path / f"{dom.name}.truth.json").read_text())
    got = Counter((r.task_id.split("/")[-1], r.trial, r.success) for r in loaded.runs)
    want = Counter((t["task_id"], t["trial"], t["reward"] == 1.0) for t in truth["runs"])
    assert len(loaded.runs) == len(runs) == dom.n_tasks * dom.trials
    assert got == want
    with_actions = dom.axes["expected_actions"] == "with"
    assert any(r.ground_truth for r in loaded.runs) == with_actions
    calls = Counter(c.name for r in loaded.runs for c in r.tool_calls if c.requestor == "agent")
    assert calls == Counter(c.name for r in runs for c in r.tool_calls if c.requestor == "agent")


def test_error_flags_and_the_users_own_calls_reach_the_loader_where_the_format_carries_them(tmp_path):
    seed = next(s for s in BENCH_SEEDS if draw_axes(s)["error_shape"] == "flag"
                and "error_recovery" in draw_families(s))
    dom = random_domain(seed)
    loaded = load_runs([str(dom.write_runs(dom.runs(), tmp_path / "flag"))])
    assert any(c.error for r in loaded.runs for c in r.tool_calls)
    seed = next(s for s in BENCH_SEEDS if draw_axes(s)["source_format"] == "tau2" and "user_side_action" in draw_families(s))
    dom = random_domain(seed)
    loaded = load_runs([str(dom.write_runs(dom.runs(), tmp_path / "user"))])
    assert any(c.requestor == "user" for r in loaded.runs for c in r.tool_calls)


@pytest.mark.parametrize("seed", [0, 7, 13, 26])
def test_truth_matches_the_runs(seed):
    dom = random_domain(seed)
    runs = dom.runs()
    for run in runs:
        truth = run.meta["planted"]
        assert run.success == (not truth["deficits"] and not truth["noise"]), run.run_id
        assert set(truth["deficits"]) <= set(truth["exposed"])
        assert run.meta["axes"] == dom.axes
        assert (dom.decoy_tool in {c.name for c in run.tool_calls}) == (DECOY in truth["decoys"])
    shown = Counter(d for r in runs for d in r.meta["planted"]["deficits"])
    failed = sum(not r.success for r in runs)
    assert set(shown) == set(dom.deficits) and len(dom.deficits) == len(dom.families)
    assert all(n >= 0.08 * failed for n in shown.values()), (shown, failed)  # each a fair share of the failures
    assert {d.family for d in dom.deficits.values()} == set(dom.families)
    assert {r.meta["planted"]["task_kind"] for r in runs} == set(dom.kinds)
    trials = Counter(r.task_id for r in runs)
    assert set(trials.values()) == {dom.trials}


def test_the_decoy_is_read_as_often_in_passed_runs_as_in_failed_ones():
    runs = [r for s in (2, 9) for r in random_domain(s).runs()]
    read = {ok: [DECOY in r.meta["planted"]["decoys"] for r in runs if r.success == ok] for ok in (True, False)}
    rates = {ok: sum(v) / len(v) for ok, v in read.items()}
    assert abs(rates[True] - rates[False]) < 0.1 and 0.35 < rates[True] < 0.65, rates


def test_every_task_of_a_deficit_that_mattered_failed_in_each_trial_that_carried_it():
    dom = random_domain(11)
    for run in dom.runs():
        if run.meta["planted"]["deficits"]:
            assert run.reward == 0.0


def test_scoring_counts_a_capability_by_family_and_any_deficit_tool():
    dom = random_domain(3)
    name, d = next(iter(dom.deficits.items()))
    tool = d.tools[-1]
    right = {"name": "r", "family": d.family, "tools": [{"name": tool}], "roles": {}}
    wrong_family = {"name": "w", "family": "no_such_family", "tools": [tool], "roles": {}}
    decoy = {"name": "d", "family": d.family, "tools": [dom.decoy_tool], "roles": {}}
    by_role = {"name": "q", "family": d.family, "tools": [], "roles": {"write": tool}}
    s = dom.score_recovery([right, wrong_family, decoy, by_role])
    assert name in s["found"] and s["recall"] == 1 / len(dom.deficits)
    assert s["precision"] == 0.5 and s["kept"] == 4
    assert [(f["name"], f["decoy"]) for f in s["false_findings"]] == [("w", False), ("d", True)]
    assert dom.score_recovery([])["precision"] is None


def test_a_deficit_also_taught_by_another_family_is_recovered_by_it():
    seed = next(s for s in BENCH_SEEDS if "precondition_before_write" in draw_families(s))
    dom = random_domain(seed)
    d = next(d for d in dom.deficits.values() if d.family == "precondition_before_write")
    assert dom.score_recovery([{"name": "x", "family": "policy_refusal", "tools": list(d.tools)}])["found"]


def test_tool_names_follow_the_drawn_style():
    names = {style: Naming(style, {"cancel": "cancel"}).tool("cancel", "hold") for style in AXES["naming"]}
    assert names == {"snake_verb_first": "cancel_hold", "snake_noun_first": "hold_cancel", "camel": "cancelHold",
                     "dotted": "holds.cancel"}
    assert Naming("snake_noun_first", {}).tool("submit", "leave request") == "leave_request_submit"
    assert Naming("camel", {}).tool("open", "savings plan") == "openSavingsPlan"
    assert Naming("camel", {}).field("due date") == "dueDate"


def test_error_shapes_render_as_their_sources_write_them():
    def shape(error_shape: str, variant: int = 0) -> Shapes:
        return Shapes("flat", error_shape, Naming("snake_verb_first"), ("details", "state"), variant, "ValueError", 0)

    assert shape("json").error("autopay is off") == {"error": "autopay is off"}
    assert shape("json", 2).error("autopay is off", 409) == {"ok": False, "status": 409, "message": "autopay is off"}
    assert shape("flag").error("autopay is off") == "Autopay is off"
    assert shape("exception").error("autopay is off") == "ValueError: autopay is off"
    assert shape("text").error("call enable_autopay first", 409) == "ERROR 409: call enable_autopay first"


def test_record_shapes_put_the_same_fields_flat_nested_or_in_a_list():
    rec = {"id": "LN-1", "about": {"due date": "2025-03-02"}, "state": {"status": "active"}}
    naming = Naming("snake_verb_first")
    flat = Shapes("flat", "json", naming, ("details", "state"), 0, "ValueError", 0)
    nested = Shapes("nested", "json", naming, ("info", "flags"), 0, "ValueError", 0)
    listed = Shapes("list", "json", naming, ("details", "state"), 0, "ValueError", 0)
    assert flat.record_view("loan", rec, "member id", "M1") == {"loan_id": "LN-1", "member_id": "M1",
                                                                "due_date": "2025-03-02", "status": "active"}
    assert nested.record_view("loan", rec, "member id", "M1")["loan"]["flags"] == {"status": "active"}
    assert listed.list_view("loan", [rec], "member id", "M1")["loans"][0]["status"] == "active"


def test_phrasings_are_real_generic_sentences_with_their_source():
    data = json.loads((Path(__file__).parents[1] / "trace_envs/datasets/randomized/phrasings.json").read_text())
    items = [i for cat in data["categories"].values() for i in cat]
    assert 100 <= len(items) <= 400
    assert all(i["from"].split("#")[0].endswith(".json") and i["count"] >= 1 for i in items)
    assert not any(ch.isdigit() for i in items for ch in i["text"].replace("{id}", ""))
    assert set(phrasings()) == set(data["categories"])


def test_the_random_mining_benchmark_runs_on_two_seeds(tmp_path):
    from benchmarks.bench_mining import random_mining

    out = tmp_path / "random.json"
    lines = random_mining(2, out)
    text = "\n".join(lines)
    assert "per family" in text and "per axis value" in text and "mean recall per domain" in text
    for axis in AXES:
        assert f"{axis}=" in text
    data = json.loads(out.read_text())
    assert [d["seed"] for d in data["domains"]] == [0, 1]
    for d in data["domains"]:
        assert set(d["deficits"]) == set(random_domain(d["seed"]).deficits)
        assert 0.0 <= d["recall"] <= 1.0 and d["axes"] == draw_axes(d["seed"])
