"""error_recovery: the proposal rule learns (error shape -> fixing call) from the real tau-bench airline runs and from
the help-desk planted runs (other tool names, other records); the labeller gives the exact labels on both; the
example env's tools are stateful, its oracle scores 1.0 on every seed and giving up, retrying unchanged or always
taking one branch earn at most the larger class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _family import committed_example, mine_random, seed_where
from trace_envs.checks.run_view import RunView
from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.datasets.helpdesk.error_recovery import AUTOPAY, DEFICIT, NEEDS_AUTOPAY, ROAMING
from trace_envs.mining.detector import get_detector
from trace_envs.families.error_recovery.detector import error_shape, recoveries
from trace_envs.generate.policies import run_actions, run_policy, run_scripted
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
NAME = "helpdesk_enable_autopay_then_retry"
SEEDS = range(20)
FAMILY = get_detector("error_recovery")


def _ours(candidates):
    return [c for c in candidates if c.spec.family == "error_recovery"]


@pytest.fixture(scope="module")
def airline():
    if not TAU.exists():
        pytest.skip("real tau-bench data not present")
    runs = load_runs([TAU]).runs
    return runs, build_profile(runs)


@pytest.fixture(scope="module")
def helpdesk():
    runs = DOMAIN.generate(400, 0)
    return runs, build_profile(runs)


@pytest.fixture(scope="module")
def published():
    return committed_example(NAME)


def test_error_shapes_read_ids_and_dates_as_placeholders():
    assert error_shape("Error: flight HAT030 not available on date 2024-05-13") == \
        "Error: flight <v> not available on date <v>"
    assert error_shape("Error: flight HAT223 not available on date 2024-05-14") == \
        error_shape("Error: flight HAT030 not available on date 2024-05-13")


def test_real_airline_runs_propose_recovery_for_update_reservation_flights(airline):
    runs, profile = airline
    ours = _ours(propose_offline(profile, runs))
    assert [c.spec.name for c in ours] == ["recover_update_reservation_flights_error_with_get_user_details"]
    cand = ours[0]
    assert cand.spec.roles == {"write": "update_reservation_flights", "fix": "get_user_details",
                               "read": "get_reservation_details", "key": "reservation_id"}
    assert cand.args["errors"] == ["Error: payment method not found"]
    # task 26, trial 0: the guessed card id fails, the profile shows the real one, the retry with it succeeds
    run = next(r for r in runs if r.run_id == "gpt-4o-airline/26/0")
    (_, shape, fix, retry), = recoveries(run, "update_reservation_flights")
    failed = next(c for c in run.agent_calls if c.error)
    assert (shape, fix.name) == ("Error: payment method not found", "get_user_details")
    assert (failed.arguments["payment_id"], retry.arguments["payment_id"]) == ("credit_card_7334", "credit_card_9074831")


def test_real_airline_labels(airline):
    runs, profile = airline
    args = {"tool": "update_reservation_flights", "fix": "get_user_details"}

    def labels(shape):
        out = {r.run_id: FAMILY.label(RunView(r, profile.kinds), None, {**args, "errors": [shape]}) for r in runs}
        return {k: v for k, v in out.items() if v != "NA"}

    # every run that got the learned error recovered from it: nothing to contrast (Cov 0 in the mining report)
    assert labels("Error: payment method not found") == {f"gpt-4o-airline/{t}": "PRESENT"
                                                         for t in ("26/0", "20/1", "26/2", "20/3")}
    # "Unfortunately, I cannot proceed with the downgrade due to this limitation." (15/2, 15/3) says why; 15/1
    # retried the failed call unchanged; 3/0, 3/1 and 19/3 never made the fix this candidate names
    assert labels("Error: not enough seats on flight <v>") == {
        "gpt-4o-airline/3/0": "LACKING", "gpt-4o-airline/15/0": "PRESENT", "gpt-4o-airline/3/1": "LACKING",
        "gpt-4o-airline/15/1": "LACKING", "gpt-4o-airline/15/2": "PRESENT", "gpt-4o-airline/15/3": "PRESENT",
        "gpt-4o-airline/19/3": "LACKING"}


def test_tau2_retail_shows_one_recovery_too_few_to_learn():
    files = [DATA / "tau2-bench" / "results" / f for f in ("gpt-4.1_retail.json", "ft-gpt-4.1_retail.json")]
    if not all(f.exists() for f in files):
        pytest.skip("real tau2-bench data not present")
    runs = load_runs(files).runs
    profile = build_profile(runs)
    assert _ours(propose_offline(profile, runs)) == []
    # the one passed run that made a fix: the new item was not available, the product's variants gave another
    found = [(r.run_id, shape, fix.name) for r in runs if r.success
             for _, shape, fix, retry in recoveries(r, "modify_pending_order_items") if fix and retry]
    assert found == [("ft-gpt-4.1_retail/79/0", "Error: New item <v> not found or available", "get_product_details")]


def test_helpdesk_runs_propose_the_planted_recovery(helpdesk):
    runs, profile = helpdesk
    ours = _ours(propose_offline(profile, runs))
    assert [c.spec.name for c in ours] == [f"recover_{ROAMING}_error_with_{AUTOPAY}"]
    params = ours[0].spec.params
    assert (params["error"], params["field"], params["unready"], params["ready"]) == (NEEDS_AUTOPAY, "autopay", "off", "on")
    assert params["reason"] == "the card on file is expired"
    # what tells the classes apart on the record, and what the retry changes, as the runs show them
    assert (params["cause"], params["cause_ok"], params["cause_blocked"]) == ("payment_methods.*.expired", False, True)
    assert params["sets"] == {"line.roaming": "on"}
    assert DOMAIN.match_deficit("error_recovery", FAMILY.target_tools(ours[0].spec.roles)) == DEFICIT


def test_helpdesk_labels_follow_the_planted_truth(helpdesk):
    runs, profile = helpdesk
    args = {"tool": ROAMING, "fix": AUTOPAY, "errors": [NEEDS_AUTOPAY]}
    seen = set()
    for run in runs:
        truth = run.meta["planted"]
        want = "NA" if truth["task_kind"] != "roaming_autopay" else (
            "LACKING" if DEFICIT in truth["deficits"] else "PRESENT")
        assert FAMILY.label(RunView(run, profile.kinds), None, args) == want, run.run_id
        seen.add((want, run.success))
    assert {("LACKING", False), ("PRESENT", True), ("PRESENT", False)} <= seen  # noise fails a correct run too


def test_tools_are_stateful(published):
    _, cls = published
    env = cls()
    seed_where(env, lambda s: s.klass == "fixable")
    target = env.scenario.bindings["target"]
    first = json.loads(env.step(json.dumps({"name": ROAMING, "arguments": {"account_no": target, "roaming": "on"}}))[0])
    assert first == {"error": NEEDS_AUTOPAY}
    env.step(json.dumps({"name": AUTOPAY, "arguments": {"account_no": target}}))
    retry = json.loads(env.step(json.dumps({"name": ROAMING, "arguments": {"account_no": target, "roaming": "on"}}))[0])
    assert "error" not in retry
    record = json.loads(env.step(json.dumps({"name": "get_account", "arguments": {"account_no": target}}))[0])
    assert (record["autopay"], record["line"]["roaming"]) == ("on", "on")
    assert not any(m["expired"] for m in record["payment_methods"])


def test_the_unfixable_record_shows_why_and_the_fix_fails(published):
    _, cls = published
    env = cls()
    seed_where(env, lambda s: s.klass == "unfixable")
    target = env.scenario.bindings["target"]
    record = json.loads(env.step(json.dumps({"name": "get_account", "arguments": {"account_no": target}}))[0])
    assert all(m["expired"] for m in record["payment_methods"])
    fix = json.loads(env.step(json.dumps({"name": AUTOPAY, "arguments": {"account_no": target}}))[0])
    assert fix == {"error": "Error: autopay cannot be enabled; the card on file is expired"}


def test_oracle_one_and_lazy_recoveries_nothing_on_every_seed(validated_example):
    _, result, cls = validated_example(NAME)
    assert result.report.classes == {"fixable": 0.5, "unfixable": 0.5}
    env = cls()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        for mutant in ("gives_up", "retry_unchanged", "claims_success"):
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] == 0.0, (seed, mutant)
        assert run_scripted(env, "mutant", seed, mutant="retry_loop")[0] < 1.0, seed  # the fix, after a loop


def test_always_fixing_and_retrying_earns_at_most_the_fixable_class(published):
    _, cls = published
    env = cls()
    wins = []
    for seed in SEEDS:
        env.reset(seed=seed)
        target = env.scenario.bindings["target"]
        calls = [json.dumps({"name": n, "arguments": a}) for n, a in (
            ("get_account", {"account_no": target}), (ROAMING, {"account_no": target, "roaming": "on"}),
            (AUTOPAY, {"account_no": target}), (ROAMING, {"account_no": target, "roaming": "on"}))]
        reward = run_actions(env, [*calls, f"Done: roaming is on for account {target}."], seed)[0]
        wins.append(reward == 1.0)
        assert wins[-1] == (env.scenario.klass == "fixable"), seed
    assert sum(wins) / len(wins) <= 0.5


def test_planted_agents_in_the_example_env(published):
    _, cls = published
    env = cls()
    assert min(run_policy(env, DOMAIN.policy_agent([]), s)[0] for s in SEEDS) == 1.0
    assert max(run_policy(env, DOMAIN.policy_agent([DEFICIT]), s)[0] for s in SEEDS) == 0.0


def test_under_other_names_the_same_recovery_is_learned(helpdesk):
    from _renamed import rename_run

    names = {ROAMING: "toggle_travel_service", AUTOPAY: "activate_auto_billing", "autopay": "auto_billing",
             "get_account": "fetch_billing_profile", "account_no": "profile_ref", "roaming": "travel_service",
             "payment_methods": "wallets", "expired": "lapsed"}
    runs = [rename_run(r, names) for r in helpdesk[0]]
    ours = _ours(propose_offline(build_profile(runs), runs))
    assert [c.spec.roles for c in ours] == [{"write": "toggle_travel_service", "fix": "activate_auto_billing",
                                             "read": "fetch_billing_profile", "key": "profile_ref"}]
    params = ours[0].spec.params
    assert (params["field"], params["unready"], params["ready"], params["cause"]) == \
        ("auto_billing", "off", "on", "wallets.*.lapsed")
    assert params["sets"] == {"line.travel_service": "on"}


def test_a_fix_addressed_by_the_records_holder_publishes_from_randomized_runs(tmp_path):
    """Randomized seed 0 (camelCase, JSON errors): updatePermitVehicle fails with "autopay is off for permit holder
    H-...; call turnOnAutopay first"; turnOnAutopay takes the holder's id, which the permit read shows, not the permit
    id, and no later read shows its change. It is learned as a write from what it unblocked, held as a setting made for
    the holder the record names (`fix_by`), and the env publishes: its oracle scores 1.0, giving up nothing."""
    from trace_envs.datasets.randomized import random_domain
    from trace_envs.generate.publish import generate_one

    runs = random_domain(0).runs()
    profile = build_profile(runs)
    assert profile.tools["turnOnAutopay"].kind == "write"
    ours = [c for c in _ours(propose_offline(profile, runs)) if c.spec.roles["fix"] == "turnOnAutopay"]
    assert [c.spec.roles["write"] for c in ours] == ["updatePermitVehicle"]
    spec = ours[0].spec
    assert spec.params["fix_by"] == {"permitHolderId": "permitHolderId"}
    result = generate_one(spec, tmp_path)
    assert result.published, result.error
    from trace_envs.envs_loader import env_class, import_module_from
    from trace_envs.generate.publish import MODULE_FILE

    env = env_class(import_module_from(Path(result.path) / MODULE_FILE))()
    for seed in range(6):
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        assert run_scripted(env, "mutant", seed, mutant="gives_up")[0] == 0.0, seed
        holder = env.scenario.bindings["fix_permitHolderId"]
        assert holder in env.scenario.state["prerequisites"]["updatePermitVehicle"][0]["error"]


@pytest.mark.parametrize("seed,fix", [
    (1, "id_checks.complete"),  # bank, list-shaped records: the fix takes the client id the listing holds
    (17, "contact_details_verify"),  # clinic: the runs never show the fix failing
    (21, "confirm_contact_details"),  # bank: "Verify the contact details ..." that a failed write waited for
])
def test_stranger_recoveries_are_mined_and_publish(seed, fix, tmp_path):
    """Randomized domains whose recovery was missed: seed 1's fix takes the client id, which the listing read holds
    and its listed accounts do not (no record satisfied the scenario); seed 17's invented fix failure was told back
    as 60 characters of the tool's reply (a paste) and its error named the run's own appointment; seed 21's fix is
    described as a verification (a read) though a failed write succeeded unchanged right after it in the runs."""
    dom, caps = mine_random(seed, tmp_path)
    score = dom.score_recovery(caps)
    ours = [d for d in dom.deficits if dom.deficits[d].family == "error_recovery"]
    assert ours and all(d in score["found"] for d in ours), score
    assert score["precision"] == 1.0
    assert any(c["family"] == "error_recovery" and c["roles"]["fix"] == fix for c in caps)


def test_a_fix_the_description_calls_a_check_is_a_write_when_it_unblocked_a_write():
    from trace_envs.datasets.randomized import random_domain

    tools = build_profile(random_domain(21).runs()).tools
    assert tools["confirm_contact_details"].kind == "write"
    assert "succeeded unchanged right after it" in tools["confirm_contact_details"].kind_evidence
