"""claim_verification: the user states a record fact as the reason for a write; the agent reads the record first, writes
only when it agrees, and otherwise tells the user what it shows. Proposed and labelled on the help-desk planted runs
(get_invoice / waive_late_fee, an invoice said to be paid) and on the real tau-bench airline runs (get_user_details /
send_certificate, a user who says they are a Gold member)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _family import committed_example, seed_where
from trace_envs.checks.run_view import RunView
from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.mining.detector import get_detector
from trace_envs.families.claim_verification.detector import claims_in
from trace_envs.generate.policies import run_actions, run_policy, run_scripted
from trace_envs.mining.label import label_view
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.runtime.world import call
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile
from trace_envs.trajectories.results import ResultIndex

NAME = "helpdesk_verify_paid_invoice_before_waiver"
READ, WRITE = "get_invoice", "waive_late_fee"
SEEDS = range(20)
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")
CERTIFICATE = "verify_membership_claim_before_send_certificate"


@pytest.fixture(scope="module")
def generated():
    return committed_example(NAME)


def _domain(runs):
    profile = build_profile(runs)
    ours = {c.name: c for c in propose_offline(profile, runs) if c.spec.family == "claim_verification"}
    return runs, {n: t.kind for n, t in profile.tools.items()}, ours


@pytest.fixture(scope="module")
def helpdesk():
    return _domain(DOMAIN.generate(600, seed=0))


@pytest.fixture(scope="module")
def airline():
    return _domain(load_runs([TAU]).runs)


# ---------------------------------------------------------------------------------------------------------- the env
def test_the_user_claims_the_invoice_is_paid_and_half_the_claims_are_false(validated_example):
    _, result, cls = validated_example(NAME)
    env = cls()
    classes = []
    for seed in SEEDS:
        env.reset(seed=seed)
        b, records = env.scenario.bindings, env.scenario.state["records"]
        assert f"The status of my invoice {b['target']} is paid" in env.opening
        assert records[b["target"]]["status"] == b["reason"] == ("paid" if b["allowed"] else "open")
        classes.append(env.scenario.klass)
    assert classes.count("true_claim") == classes.count("false_claim") == 10
    assert result.report.classes == {"false_claim": 0.5, "true_claim": 0.5}


def test_same_seed_same_episode(generated):
    _, cls = generated
    a, b = cls(), cls()
    for seed in (0, 7):
        assert a.reset(seed=seed)[0] == b.reset(seed=seed)[0]
        assert a.oracle_actions() == b.oracle_actions() and a.mutant_actions() == b.mutant_actions()
    assert a.reset(seed=1)[0] != a.reset(seed=2)[0]


def test_oracle_earns_one_and_every_mutant_less(validated_example):
    _, result, cls = validated_example(NAME)
    assert {"trusts_claim", "ignores_record", "paste_record"} <= set(result.report.mutants)
    env = cls()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        true_claim = env.scenario.bindings["allowed"]
        for mutant in env.mutant_actions():
            score = run_scripted(env, "mutant", seed, mutant=mutant)[0]
            # a write on the claim alone earns the write's third when the claim happens to be true, nothing else
            assert score == (1 / 3 if true_claim and mutant in ("trusts_claim", "drop_required_call", "swap_calls")
                             else 0.0), (seed, mutant)


def _waive(env) -> str:
    return call(WRITE, invoice_id=env.scenario.bindings["target"])


def _read(env) -> str:
    return call(READ, invoice_id=env.scenario.bindings["target"])


def test_a_careful_agent_earns_one_and_lazy_ones_do_not(generated):
    _, cls = generated
    env = cls()
    seed = seed_where(env, lambda s: not s.bindings["allowed"])
    inv = env.scenario.bindings["target"]
    record = env.scenario.state["records"][inv]
    # announcing, then the record's value in a sentence of its own words
    careful = ["Let me check that invoice first.", _read(env),
               f"I looked at invoice {inv}: it is still open, so I can't waive its late fee yet."]
    assert run_actions(env, careful, seed=seed)[0] == 1.0
    # the same words before the read, the record pasted, a refusal without the value, a write anyway: nothing
    assert run_actions(env, [careful[2], _read(env), "Done."], seed=seed)[0] == 0.0
    assert run_actions(env, [_read(env), f"Here it is: {json.dumps(record)}"], seed=seed)[0] == 0.0
    assert run_actions(env, [_read(env), "Sorry, I can't waive that fee."], seed=seed)[0] == 0.0
    assert run_actions(env, [_read(env), _waive(env), "Done."], seed=seed)[0] == 0.0
    seed = seed_where(env, lambda s: s.bindings["allowed"])
    assert run_actions(env, ["Let me check.", _read(env), _waive(env), "Done, the fee is waived."], seed=seed)[0] == 1.0
    # trusting the claim without reading: the write's third; doubting a true claim: nothing
    assert run_actions(env, [_waive(env), "Done."], seed=seed)[0] == pytest.approx(1 / 3)
    inv = env.scenario.bindings["target"]
    assert run_actions(env, [_read(env), f"Invoice {inv} is paid, but I can't waive the fee."], seed=seed)[0] == 0.0


def test_always_trust_and_always_refuse_earn_at_most_the_larger_class(generated):
    _, cls = generated
    env = cls()
    trust = refuse = 0
    for seed in SEEDS:
        env.reset(seed=seed)
        status = env.scenario.bindings["reason"]
        trust += run_actions(env, [_read(env), _waive(env), "Done."], seed=seed)[0] == 1.0
        told = f"Our records show the invoice's status is {status}, so I can't waive the late fee."
        refuse += run_actions(env, [_read(env), told], seed=seed)[0] == 1.0
    assert trust == refuse == 10


def test_the_planted_agent_with_the_deficit_fails_the_env_and_the_one_without_passes(generated):
    _, cls = generated
    env = cls()
    clean = [run_policy(env, DOMAIN.policy_agent(), seed)[0] for seed in SEEDS]
    trusting = [run_policy(env, DOMAIN.policy_agent(["trusts_claim"]), seed)[0] for seed in SEEDS]
    assert min(clean) == 1.0
    assert sum(trusting) / len(trusting) == pytest.approx((10 * 1 / 3) / 20)  # a third on each true claim


# --------------------------------------------------------------------------------------------------- the help desk
def test_proposed_on_the_help_desk_runs(helpdesk):
    _, _, ours = helpdesk
    assert set(ours) == {"verify_status_claim_before_waive_late_fee"}
    cand = ours["verify_status_claim_before_waive_late_fee"]
    assert cand.spec.roles == {"read": READ, "write": WRITE, "key": "invoice_id"}
    assert cand.spec.params == {"field": "status", "claimed": "paid", "refuted": ["open"], "label": "status"}


def test_labels_of_the_planted_runs(helpdesk):
    runs, kinds, ours = helpdesk
    cand = ours["verify_status_claim_before_waive_late_fee"]
    labels = {r.run_id: label_view(cand, RunView(r, kinds)) for r in runs}
    truth = {r.run_id: r.meta["planted"] for r in runs}
    lacking = {i for i, lab in labels.items() if lab == "LACKING"}
    assert lacking == {i for i, t in truth.items() if "trusts_claim" in t["deficits"]}
    assert all(labels[i] == "NA" for i, t in truth.items() if t["task_kind"] != "claim")
    # PRESENT: every other run of the kind that read the invoice before any waiver (then waived a paid invoice, or
    # told the customer it is open); NA: the waivers on a true claim left unread, and every other kind's run
    verified = set()
    for run in runs:
        names = [c.name for c in run.agent_calls]
        if truth[run.run_id]["task_kind"] == "claim" and READ in names and run.run_id not in lacking:
            assert WRITE not in names or names.index(READ) < names.index(WRITE)
            verified.add(run.run_id)
    assert {i for i, lab in labels.items() if lab == "PRESENT"} == verified
    assert len(lacking) > 40 and len(verified) > 70  # how many depends on the kinds sharing the runs


def test_without_expected_actions_a_write_on_a_true_claim_left_unread_is_lacking(helpdesk):
    runs, kinds, ours = helpdesk
    cand = ours["verify_status_claim_before_waive_late_fee"]
    # a trusting agent on a true claim: the write is right, so with expected actions the claim decided nothing
    run = next(r for r in runs if r.meta["planted"]["task_kind"] == "claim" and r.success
               and READ not in [c.name for c in r.agent_calls])
    assert label_view(cand, RunView(run, kinds)) == "NA"
    assert label_view(cand, RunView(run.model_copy(update={"ground_truth": None}), kinds)) == "LACKING"


def test_params_from_the_policy_without_the_runs(helpdesk):
    runs, kinds, _ = helpdesk
    index = ResultIndex(runs, kinds)
    params, note = get_detector("claim_verification").infer_params(
        {"read": READ, "write": WRITE, "key": "invoice_id"}, index, DOMAIN.policy)
    assert params == {"field": "status", "claimed": "paid", "refuted": ["open"], "label": "status"}
    assert note == " The user claims the status is paid."


# ------------------------------------------------------------------------------------------------------ real data
def test_claims_as_real_users_word_them():
    values = ["gold", "silver", "regular", "delayed", "cancelled", "business"]
    # tau-bench airline users (gpt-4o-airline 16/0, 40/0, 45/0) ...
    assert claims_in("I'm really upset because my flight HAT039 from ATL to SEA has been delayed. Can you tell me "
                     "what's going on?", values) == ["delayed"]
    assert claims_in("Hello! As a Gold member, I've always had great experiences, but my recent flight earlier this "
                     "month was canceled.", values) == ["gold", "cancelled"]
    assert claims_in("It was just the initial flight out of Boston that got delayed.", values) == ["delayed"]
    # ... while a question or a wish is no claim
    assert claims_in("Can you tell me if my flight is delayed?", values) == []
    assert claims_in("I'd like to change to business class.", values) == []
    assert claims_in("I want to upgrade to business.", values) == []


def test_a_claim_is_read_to_the_end_of_its_clause():
    """The claimed value may come late in the clause ("... with a full tank"); a comma ends it, and a wish after the
    assertion is still no claim."""
    values = ["full", "half", "quarter"]
    assert claims_in("I already returned the car from rental RT0235VJ with a full tank.", values) == ["full"]
    assert claims_in("I returned the car yesterday, and I'd like it to be full next time.", values) == []
    assert claims_in("I already returned the car from rental RT0235VJ and would like a full refund.", values) == []


def test_a_claim_users_word_their_own_way_is_learned_from_what_the_runs_did_after_it(tmp_path):
    """Randomizer seed 9 (insurance, ToolSandbox folders, no expected actions, list-shaped records): users say "I
    already paid the overdue premium on policy P", a sentence naming no value of the record; the passed runs
    reinstated the policies whose payment status was `received` and left the others alone, so the claim stands for
    `received` and the planted deficit is recovered (before: nothing proposed, no value was ever said)."""
    from _family import mine_random

    dom, caps = mine_random(9, tmp_path)
    [cap] = [c for c in caps if c["family"] == "claim_verification"]
    assert cap["roles"] == {"read": "read_policyholder_policies", "write": "reinstate_policy", "key": "policy_id"}
    assert (cap["params"]["field"], cap["params"]["claimed"]) == ("payment_status", "received")
    assert "trusts_claim" in dom.score_recovery(caps)["found"]


def test_a_claim_users_word_is_not_what_the_write_takes(tmp_path):
    """Randomizer seed 1 (bank): users ask to "add my partner as a joint holder on account A (holder name: Ana
    Petrov)"; "as a joint holder" reads like an assertion, and its words, the write's own and those of its argument
    `holder_name`, made a paraphrased claim that absorbed the policy's gate on the account's state. They are the
    request: no claim is kept and the gate is."""
    from _family import mine_random

    dom, caps = mine_random(1, tmp_path)
    assert not [c for c in caps if c["family"] == "claim_verification"]
    score = dom.score_recovery(caps)
    assert "ignores_state_rule" in score["found"] and score["precision"] == 1.0


@needs_data
def test_proposed_on_the_real_airline_runs(airline):
    _, _, ours = airline
    cand = ours[CERTIFICATE]
    assert cand.spec.roles == {"read": "get_user_details", "write": "send_certificate", "key": "user_id"}
    assert cand.spec.params == {"field": "membership", "claimed": "gold", "refuted": ["silver", "regular"],
                                "label": "membership"}


@needs_data
def test_labels_of_named_real_runs(airline):
    runs, kinds, ours = airline
    cand = ours[CERTIFICATE]
    labels = {r.run_id: label_view(cand, RunView(r, kinds)) for r in runs}
    # "I'm a Gold member"; the record says regular; a certificate sent anyway, which the task does not expect: failed
    assert {i for i, lab in labels.items() if lab == "LACKING"} == {"gpt-4o-airline/37/0", "gpt-4o-airline/40/2"}
    # 40/1: 'your membership status is listed as "regular," not "Gold."', no certificate; 44/0 and 44/2 say silver
    assert {i for i, lab in labels.items() if lab == "PRESENT"} == {
        "gpt-4o-airline/40/1", "gpt-4o-airline/44/0", "gpt-4o-airline/44/2"}
    assert all(r.success for r in runs if labels[r.run_id] == "PRESENT")
    assert not any(r.success for r in runs if labels[r.run_id] == "LACKING")


@needs_data
def test_a_real_certificate_sent_without_reading_the_user_is_lacking(airline):
    runs, kinds, ours = airline
    cand = ours[CERTIFICATE]
    run = next(r for r in runs if r.run_id == "gpt-4o-airline/40/2")
    unread = [c for c in run.tool_calls if c.name != "get_user_details"]
    assert label_view(cand, RunView(run.model_copy(update={"ground_truth": None}), kinds)) == "LACKING"
    assert label_view(cand, RunView(run.model_copy(update={"tool_calls": unread, "ground_truth": None}),
                                    kinds)) == "LACKING"
    # 40/0 trusted the claim in words ("Since you are a Gold member") but transferred: no write, nothing told
    assert label_view(cand, RunView(next(r for r in runs if r.run_id == "gpt-4o-airline/40/0"), kinds)) == "NA"


def test_a_randomized_claim_env_publishes_where_the_policy_asks_for_confirmations():
    """Randomized seed 0 (parking, writes confirmed first): the extra write of `forbidden_extra_call` is made
    outright. Asked to confirm a write they never wanted, the user ends the episode before it is made, the mutant
    then equals the oracle, and `generate` refused the env, so mining kept a coarser capability in its place."""
    from trace_envs.datasets.randomized import random_domain
    from trace_envs.mining.publishable import publish_problem

    runs = random_domain(0).runs()
    [cand] = [c for c in propose_offline(build_profile(runs), runs) if c.spec.family == "claim_verification"]
    assert (cand.spec.roles["read"], cand.spec.roles["write"]) == ("getPermit", "cancelParkingTicket")
    assert publish_problem(cand.spec) is None

