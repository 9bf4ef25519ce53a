"""The help-desk planted domain: a second planted domain (its own tool names and record shapes) whose task kinds are
one module each. Its runs are deterministic, round-trip through the tau-bench reader a user's file goes through, and
offline mining recovers every planted deficit, each by the family that teaches it, with nothing else kept."""

from __future__ import annotations

import pkgutil

import pytest

import trace_envs.datasets.helpdesk as helpdesk
from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.mining.label import spec_target_tools
from trace_envs.mining.pipeline import MineOptions, mine
from trace_envs.trajectories.loaders import load_runs


def test_every_module_but_the_core_is_a_registered_task_kind():
    modules = {m.name for m in pkgutil.iter_modules(helpdesk.__path__)} - {"core"}
    assert len(DOMAIN.kinds) == len(modules) >= 1
    assert all(k.exposure <= set(DOMAIN.deficits) for k in DOMAIN.kinds.values())
    assert set().union(*(k.exposure for k in DOMAIN.kinds.values())) == set(DOMAIN.deficits)


def test_the_profile_infers_the_kind_each_kind_module_declares_for_its_tools():
    """The runs carry tool schemas, not kinds: a miner infers them, and must agree with the domain's own table."""
    from trace_envs.trajectories.profile import build_profile

    profile = build_profile(DOMAIN.generate(400, seed=0))
    inferred = {name: tool.kind for name, tool in profile.tools.items()}
    assert inferred == {name: DOMAIN.tool_kinds[name] for name in inferred}
    assert set(inferred) == set(DOMAIN.tool_kinds) - {"escalate_to_specialist"}  # no planted task needs a human


def test_deterministic_per_seed_and_run_index():
    a, b = DOMAIN.generate(60, seed=3), DOMAIN.generate(60, seed=3)
    assert [r.messages for r in a] == [r.messages for r in b]
    assert [r.messages for r in DOMAIN.generate(5, seed=3, start=55)] == [r.messages for r in a[55:]]
    assert [r.messages for r in DOMAIN.generate(60, seed=4)] != [r.messages for r in a]


def test_a_run_fails_exactly_when_a_deficit_showed_or_noise_hit():
    runs = DOMAIN.generate(400, seed=0)
    for run in runs:
        truth = run.meta["planted"]
        assert run.success == (not truth["deficits"] and not truth["noise"]), run.run_id
        assert set(truth["deficits"]) <= set(truth["exposed"])
    shown = {d for r in runs for d in r.meta["planted"]["deficits"]}
    assert shown == set(DOMAIN.deficits)
    assert {r.meta["planted"]["task_kind"] for r in runs} == set(DOMAIN.kinds)


def test_the_decoy_is_skipped_as_often_in_passed_runs_as_in_failed_ones():
    runs = DOMAIN.generate(2000, seed=0)
    skipped = {ok: [bool(r.meta["planted"]["decoys"]) for r in runs if r.success == ok] for ok in (True, False)}
    rates = {ok: sum(v) / len(v) for ok, v in skipped.items()}
    assert abs(rates[True] - rates[False]) < 0.06 and 0.4 < rates[True] < 0.6, rates
    assert all(("get_service_alerts" in {c.name for c in r.tool_calls}) != bool(r.meta["planted"]["decoys"])
               for r in runs)


def test_written_as_tau_bench_the_loader_reads_the_same_runs(tmp_path):
    runs = DOMAIN.generate(80, seed=1)
    path = DOMAIN.write(runs, tmp_path / "helpdesk.json")
    loaded = load_runs([path]).runs
    assert [r.source for r in loaded] == ["tau-bench"] * 80
    assert [r.success for r in loaded] == [r.success for r in runs]
    assert [[g.name for g in r.ground_truth] for r in loaded] == [[g.name for g in r.ground_truth] for r in runs]
    assert [[c.name for c in r.tool_calls] for r in loaded] == [[c.name for c in r.tool_calls] for r in runs]
    assert [[c.error for c in r.tool_calls] for r in loaded] == [[c.error for c in r.tool_calls] for r in runs]
    assert not list(tmp_path.glob(".helpdesk.json.*"))  # written atomically: no temp file left


@pytest.fixture(scope="module")
def mined(planted_mining):
    return planted_mining("helpdesk", seed=0, with_rules=True)[1]


def test_offline_mining_recovers_every_planted_deficit_and_nothing_else(mined):
    score = DOMAIN.score_recovery([(c.family, spec_target_tools(c)) for c in mined.capabilities])
    assert score["missed"] == [] and score["unmatched"] == [] and score["decoys"] == [], score
    assert score["precision"] == score["recall"] == 1.0


def test_the_balance_is_learned_as_the_sum_of_the_open_invoices(mined):
    spec = next(c for c in mined.capabilities if DOMAIN.match_deficit(c.family, spec_target_tools(c))
                == "pays_newest_invoice_only")
    assert spec.family == "aggregation_arithmetic" and spec.roles["write"] == "make_payment"
    assert spec.params["field"] == "invoices.*.amount"
    assert (spec.params["where_field"], spec.params["where_value"], spec.params["other_value"]) == \
        ("status", "open", "paid")


def test_planted_agent_unknown_deficit_is_refused():
    with pytest.raises(ValueError, match="unknown planted deficit"):
        DOMAIN.policy_agent(["no_such_deficit"])


# Another business's names for the same help desk: tools, arguments, record fields and categorical values.
RENAMED = {"lookup_customer": "find_member", "get_account": "fetch_billing_profile", "make_payment": "post_remittance",
           "account_no": "profile_ref", "invoices": "bills", "amount": "due", "open": "unpaid", "paid": "settled",
           "get_service_alerts": "area_notices", "customer_id": "member_id",
           "escalate_to_specialist": "handover_to_staff"}


def test_under_another_business_names_mining_recovers_the_same_deficits():
    from _renamed import rename_run

    runs = [rename_run(r, RENAMED) for r in DOMAIN.generate(2000, seed=0)]
    assert "fetch_billing_profile" in {c.name for r in runs for c in r.tool_calls}
    kept = mine(runs, options=MineOptions()).capabilities
    back = {v: k for k, v in RENAMED.items()}
    score = DOMAIN.score_recovery([(c.family, [back.get(t, t) for t in spec_target_tools(c)]) for c in kept])
    assert score["precision"] == score["recall"] == 1.0, score
    pay = next(c for c in kept if c.family == "aggregation_arithmetic")
    assert (pay.params["field"], pay.params["where_value"]) == ("bills.*.due", "unpaid")
