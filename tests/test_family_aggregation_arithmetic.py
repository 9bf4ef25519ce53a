"""aggregation_arithmetic: read every reservation listed, state the total in a sentence; dumps answer nothing."""

from __future__ import annotations

import json

import pytest

from _family import committed_example
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call

NAME = "airline_total_paid_over_reservations"
READ = "get_reservation_details"


@pytest.fixture(scope="module")
def generated():
    return committed_example(NAME)


def test_answer_is_everything_paid_over_the_listed_records(generated):
    spec, cls = generated
    assert len(next(c for c in spec.check.clauses if c.id == "read_all").calls) == spec.knobs.requests == 3
    env = cls()
    for seed in range(20):
        env.reset(seed=seed)
        b = env.scenario.bindings
        records = env.scenario.state["records"]
        paid = sum(p["amount"] for t in b["targets"] for p in records[t]["payment_history"])
        assert b["answer"] == paid and all(t in env.opening for t in b["targets"])
        assert len({records[t]["user_id"] for t in b["targets"]}) == 1  # one owner per request


def test_planted_episodes_score_exactly(generated):
    _, cls = generated
    env = cls()
    env.reset(seed=2)
    b = env.scenario.bindings
    reads = [call(READ, reservation_id=t) for t in b["targets"]]
    report = f"The total amount paid is ${b['answer']:,}. Have a nice day."  # "$12,345" counts as 12345
    assert run_actions(env, [*reads, report], seed=2)[0] == 1.0
    # any write zeroes the score
    score, info = run_actions(env, env.mutant_actions()["forbidden_extra_call"], seed=2)
    assert score == 0.0 and info["reward_breakdown"]["no_write"] == 0.0
    # weights: correct_answer 3, read_all 1 (gated on it): two of three records read and the right figure: 11/12
    assert run_actions(env, [*reads[:2], report], seed=2)[0] == pytest.approx((3 + 2 / 3) / 4)
    # off by one: nothing
    assert run_actions(env, [*reads, f"The total amount paid is {b['answer'] + 1}."], seed=2)[0] == 0.0
    # every integer up to 30000 after reading everything: nothing (the env paid 1.00)
    dump = "The total is one of these: " + " ".join(str(i) for i in range(30_001)) + "."
    assert run_actions(env, [*reads, dump], seed=2)[0] == 0.0
    # pasting the records: nothing
    pasted = "\n".join(json.dumps(env.scenario.state["records"][t]) for t in b["targets"])
    assert run_actions(env, [*reads, f"Here they are: {pasted}"], seed=2)[0] == 0.0


# ---- pay mode: the amount a write takes is the sum of the items a field selects (the open invoices) ----------------
PAY_NAME = "helpdesk_pay_open_invoices"


@pytest.fixture(scope="module")
def pay_env():
    return committed_example(PAY_NAME)


def test_pay_mode_owes_the_sum_of_the_selected_items_which_vary_over_seeds(pay_env):
    _, cls = pay_env
    env = cls()
    picked = set()
    for seed in range(20):
        env.reset(seed=seed)
        b, record = env.scenario.bindings, env.scenario.state["records"][env.scenario.bindings["target"]]
        chosen = [i for i in record["invoices"] if i["status"] == "open"]
        assert 2 <= len(chosen) < len(record["invoices"])
        assert b["answer"] == round(sum(i["amount"] for i in chosen), 2) and str(b["answer"]) not in env.opening
        picked.add(tuple(i["status"] for i in record["invoices"]))
    assert len(picked) >= 5  # which invoices are open varies: no positional rule is right


def test_pay_mode_pays_only_the_sum_once_after_reading(pay_env):
    _, cls = pay_env
    env = cls()
    for seed in range(10):
        env.reset(seed=seed)
        t = env.scenario.bindings["target"]
        record = env.scenario.state["records"][t]
        method = record["payment_methods"][0]["id"]
        owed = env.scenario.bindings["answer"]
        newest = [i for i in record["invoices"] if i["status"] == "open"][-1]["amount"]

        def pay(amount, t=t, method=method):
            return call("make_payment", account_no=t, amount=amount, payment_method_id=method)

        read = call("get_account", account_no=t)
        assert run_actions(env, [read, pay(owed), "Done."], seed)[0] == 1.0
        assert run_actions(env, [read, pay(round(owed + 0.004, 3)), "Done."], seed)[0] == 1.0  # cents rounding
        assert run_actions(env, [read, pay(newest), "Done."], seed)[0] == 0.0
        assert run_actions(env, [read, pay(owed), pay(owed), "Done."], seed)[0] == 0.0  # paid twice
        assert run_actions(env, [pay(owed), "Done."], seed)[0] < 1.0  # never read
        assert run_actions(env, [read, f"You owe {owed}."], seed)[0] == 0.0  # told, not paid


def test_pay_mode_is_not_proposed_where_no_write_takes_a_filtered_sum():
    """On the real airline runs every amount is a payment or a price, never a sum over some of a list's items."""
    from pathlib import Path

    from trace_envs.mining.propose_offline import propose_offline
    from trace_envs.trajectories.loaders import load_runs
    from trace_envs.trajectories.profile import build_profile

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"
    if not path.exists():
        pytest.skip("real data not found beside the repo (../shared/data)")
    runs = load_runs([path]).runs
    ours = [c for c in propose_offline(build_profile(runs), runs) if c.spec.family == "aggregation_arithmetic"]
    assert ours and not any(c.spec.params.get("where_field") for c in ours)


@pytest.fixture(scope="module")
def told_fines():
    """Randomized seed 10 (openai-jsonl, no expected actions): members ask what they owe in open fines and the passed
    runs' agents tell the sum; the deficit tells the first open fine's amount."""
    from trace_envs.datasets.randomized import random_domain
    from trace_envs.mining.propose_offline import propose_offline
    from trace_envs.trajectories.profile import build_profile

    runs = random_domain(10).runs()
    ours = [c for c in propose_offline(build_profile(runs), runs) if c.spec.family == "aggregation_arithmetic"]
    return runs, ours


def test_tell_mode_is_learned_from_what_passed_runs_said_without_expected_actions(told_fines):
    runs, ours = told_fines
    assert [(c.spec.roles, c.spec.params["field"], c.spec.params["where_value"]) for c in ours] == \
        [({"read": "showMemberFines", "key": "memberId"}, "fines.*.amount", "open")]
    from trace_envs.checks.run_view import RunView
    from trace_envs.mining.detector import get_detector

    family, cand = get_detector("aggregation_arithmetic"), ours[0]
    labels = {}
    for run in runs:
        label = family.label(RunView(run, {}), cand.check, cand.args)
        if label != "NA":
            labels.setdefault(label, set()).add(run.success)
    assert labels["LACKING"] == {False} and True in labels["PRESENT"]


def test_tell_mode_env_pays_the_sum_said_after_reading_only(told_fines, tmp_path):
    from trace_envs.envs_loader import env_class, import_module_from
    from trace_envs.generate.policies import run_scripted
    from trace_envs.generate.publish import MODULE_FILE, generate_one

    result = generate_one(told_fines[1][0].spec, tmp_path)
    assert result.published, result.error
    env = env_class(import_module_from(tmp_path / told_fines[1][0].spec.name / MODULE_FILE))()
    for seed in range(8):
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        for mutant in ("tell_one_item", "tell_every_item", "text_only", "wrong_argument"):
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] == 0.0, (seed, mutant)
