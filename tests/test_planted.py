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
from trace_envs.mining.pipeline import MineOptions, mine


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


# Eight deficits share the failed runs, and each must carry Cov >= 0.10 of them, its contrast holding in 8 of 10
# resamples: at the benchmark's size (2,000 runs) every seed recovers all eight; at 1,000 sampling noise alone misses
# one now and then.
RUNS = 2000


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_miner_recovers_planted_deficits(seed, planted_mining):
    res = planted_mining("retail", seed, runs=RUNS)[1]
    s = score_recovery((c.spec.family, c.target_tools()) for c in res.kept)
    assert s["precision"] >= 0.9, s
    assert s["recall"] >= 0.9, s
    assert not s["decoys"] and not s["unmatched"], s


def test_recovery_over_seeds_mean():
    # The statistics alone, as the mining benchmark measures them: that every kept planted capability publishes is
    # checked on seeds 0-4 above (the fixture mines with the publish check) and in test_mined_specs_generate.
    ps, rs = [], []
    for seed in range(10, 16):
        res = mine(generate_planted(RUNS, seed=seed), options=MineOptions(check_publish=False))
        s = score_recovery((c.spec.family, c.target_tools()) for c in res.kept)
        ps.append(s["precision"])
        rs.append(s["recall"])
        assert not s["decoys"]
    assert sum(ps) / len(ps) >= 0.9 and sum(rs) / len(rs) >= 0.9


# ---- one module per task kind --------------------------------------------------------------------------------------
def test_each_task_kind_is_one_module_the_registry_finds():
    import pkgutil

    import trace_envs.datasets.planted as planted

    modules = sorted(m.name for m in pkgutil.iter_modules(planted.__path__))
    assert modules == ["agent", "app", "core", "exchange"]
    assert planted.KIND_MODULES == ["app", "exchange"] == sorted(planted.KINDS)
    for name, kind in planted.KINDS.items():
        played_by = kind.task.act if kind.task is not None else kind.simulate
        assert played_by.__module__ == f"trace_envs.datasets.planted.{name}"
        assert {d.name for d in kind.deficits} <= set(kind.exposure) <= set(PLANTED_DEFICITS)
    # the registered kinds come after the built-in ones, in their order (exchange 1, app 2), whatever the import order
    assert list(planted.TASK_MIX) == ["cancel", "refund", "address", "multi", "forbidden", "handoff", "exchange", "app"]
    assert list(PLANTED_DEFICITS)[-2:] == ["picks_first_option", "vague_user_instruction"]
    assert planted.POLICY.index("search_variants") < planted.POLICY.index("get_app_status")
    assert {r.meta["planted"]["task_kind"] for r in generate_planted(300, seed=0)} == set(planted.TASK_MIX)


def test_registering_a_kind_adds_its_pieces_in_order_and_refuses_a_second_of_a_name():
    from trace_envs.datasets.planted import core
    from trace_envs.datasets.sim import STR, fn_schema

    before = (core.POLICY, list(core.TASK_MIX.items()), [t["function"]["name"] for t in core.TOOLS])
    kind = core.PlantedKind(
        name="aaa_probe", order=1, share=0.05, share_from="multi", exposure=frozenset({"no_confirmation"}),
        policy="- A probe kind's sentence.\n", tools=(("read", fn_schema("probe_read", "Read.", {"id": STR}, ["id"])),),
        task=core.KINDS["exchange"].task)
    try:
        core.register_kind(kind)
        # order 1 like exchange: name order puts the probe first among them
        assert list(core.TASK_MIX)[6:] == ["aaa_probe", "exchange", "app"]
        assert core.TASK_MIX["multi"] == pytest.approx(before[1][3][1] - 0.05)
        assert [t["function"]["name"] for t in core.TOOLS][7:9] == ["probe_read", "search_variants"]
        assert core.TOOL_KINDS["probe_read"] == "read"
        assert core.POLICY.index("A probe kind's sentence") < core.POLICY.index("search_variants")
        with pytest.raises(ValueError, match="already defined"):
            core.register_kind(kind)
    finally:
        core.KINDS.pop("aaa_probe", None)
        core._assemble()
    assert (core.POLICY, list(core.TASK_MIX.items()), [t["function"]["name"] for t in core.TOOLS]) == before
    with pytest.raises(ValueError, match="exactly one of task"):
        core.register_kind(core.PlantedKind(name="zzz_probe", order=9, share=0.1, exposure=frozenset()))
    assert "zzz_probe" not in core.KINDS


# ---- what every planted domain shares (a second domain's tables, with other tool names) ----------------------------
def test_the_shared_builder_records_agent_errors_and_user_calls():
    import random

    from trace_envs.datasets.sim import Builder

    b = Builder(random.Random(0), "# Help desk policy")
    b.user("My VPN says access denied.")
    b.call("reset_vpn_token", {"employee_id": "E-1"}, "Error: the account is locked", error=True)
    b.user_call("restart_laptop", {}, {"restarted": True}, "OK, I restarted it.")
    assert [m["role"] for m in b.messages] == ["system", "user", "assistant", "tool", "user", "tool", "user"]
    assert b.messages[0]["content"] == "# Help desk policy"
    agent, user = b.calls
    assert (agent.error, agent.requestor, agent.result) == (True, "agent", "Error: the account is locked")
    assert (user.error, user.requestor, user.arguments, user.message_index) == (False, "user", {}, 4)
    assert b.messages[4]["tool_calls"][0]["requestor"] == b.messages[5]["requestor"] == "user"
    assert b.messages[6] == {"role": "user", "content": "OK, I restarted it."}


def test_shared_scoring_takes_the_domain_tables():
    from trace_envs.datasets.sim import PlantedDeficit, match_deficit, score_recovery

    deficits = {"no_unlock": PlantedDeficit("no_unlock", "error_recovery", ("unlock_account", "reset_vpn_token"),
                                            0.5, "gives up on the locked account")}
    decoys = {"skip_faq": PlantedDeficit("skip_faq", "error_recovery", ("search_faq",), 0.5, "skips the FAQ",
                                         decoy=True)}
    assert match_deficit(deficits, decoys, "error_recovery", ["reset_vpn_token"]) == "no_unlock"
    assert match_deficit(deficits, decoys, "error_recovery", ["search_faq"]) == "skip_faq"
    assert match_deficit(deficits, decoys, "error_recovery", []) is None
    s = score_recovery(deficits, decoys, [("error_recovery", ["unlock_account"]), ("error_recovery", ["search_faq"]),
                                          ("policy_refusal", ["unlock_account"])])
    assert (s["precision"], s["recall"], s["found"]) == (1 / 3, 1.0, ["no_unlock"])
    assert s["decoys"] == ["error_recovery:search_faq"] and s["unmatched"] == ["policy_refusal:unlock_account"]


def test_the_shared_finish_fails_a_shown_deficit_and_the_noise():
    import random

    from trace_envs.datasets.sim import Builder, finish_run, run_to_record

    b = Builder(random.Random(0), "# Help desk policy")
    b.user("My VPN says access denied.")
    common = {"domain": "helpdesk", "tools": [], "ground_truth": [], "instruction": "My VPN says access denied."}
    run, truth = finish_run(7, random.Random(0), b, "vpn", {"no_unlock"}, 0.0, ticket="T-1", **common)
    assert (run.run_id, run.task_id, run.success, run.reward, run.policy) == (
        "planted/7", "vpn-7", False, 0.0, "# Help desk policy")
    assert truth == run.meta["planted"] == {"task_kind": "vpn", "deficits": ["no_unlock"], "noise": False,
                                            "ticket": "T-1"}
    assert run_to_record(run)["domain"] == "helpdesk"
    noisy, truth = finish_run(8, random.Random(0), b, "vpn", [], 1.0, **common)
    assert (noisy.success, truth["noise"]) == (False, True)
    clean, truth = finish_run(9, random.Random(0), b, "vpn", [], 0.0, **common)
    assert (clean.success, clean.reward, truth["deficits"], truth["noise"]) == (True, 1.0, [], False)
