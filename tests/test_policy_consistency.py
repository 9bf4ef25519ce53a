"""Envs agree with the policy they show: no rule the agent is never shown, the sections that govern the env instead of
the whole document, the current time stated when the text has time rules, and records that keep the invariants the
real ones satisfy."""

from __future__ import annotations

import re
from pathlib import Path

from trace_envs.datasets.planted import POLICY, generate_planted
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.spec.policy_text import excerpt, with_current_time
from trace_envs.trajectories.invariants import violations
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WIKI = (DATA / "tau-bench" / "airline-wiki.md").read_text()


def test_a_gate_the_shown_policy_never_mentions_is_not_used():
    """A user's own five runs whose rule was "only pending orders can be cancelled": the issue's env gated on a
    synthetic account_status the policy never names. Now every gated candidate turns on a field the policy names, and
    the ones the data cannot support are left out with their reason."""
    policy = "You help users cancel orders. Only pending orders can be cancelled; confirm before any change."
    runs = [r.model_copy(update={"policy": policy}) for r in generate_planted(5, 3)]
    skipped: list[str] = []
    candidates = propose_offline(build_profile(runs), runs, skipped=skipped)
    for cand in candidates:
        field = cand.spec.params.get("field")
        assert field != "account_status"
        if field and cand.spec.params.get("blocked"):  # a gate: the field the write turns on
            named = [field.split(".")[-1], *map(str, cand.spec.params.get("blocked", []))]
            assert any(re.search(rf"\b{re.escape(w)}\b", policy, re.I) for w in named), cand.spec.params
    assert skipped and all(": " in line for line in skipped)


def test_an_env_shows_the_sections_that_govern_its_tools():
    shown = excerpt(WIKI, ["cancel_reservation"], ["transfer_to_human_agents"], ["cabin"])
    assert len(shown) < len(WIKI) / 2
    assert "All reservations can be cancelled within 24 hours of booking" in shown
    assert "you must list the action details and obtain explicit user confirmation" in shown
    assert "Checked bag allowance" not in shown  # a booking rule, not a cancellation one


def test_the_current_time_is_stated_when_the_text_has_time_rules():
    rule = "- All reservations can be cancelled within 24 hours of booking."
    assert with_current_time(rule, "2024-05-15T15:00:00").startswith("The current time is 2024-05-15 15:00:00.")
    assert with_current_time("- Confirm before any change.", "2024-05-15T15:00:00") == "- Confirm before any change."


def test_real_records_satisfy_the_learned_invariants_and_a_broken_one_is_caught():
    runs = load_runs([DATA / "tau-bench" / "gpt-4o-airline.json"]).runs
    profile = build_profile(runs)
    invariants = profile.invariants["get_reservation_details"]
    described = {i.describe() for i in invariants}
    assert {"created_at <= flights.*.date", "flights.*.date in date order", "created_at <= $now"} <= described
    assert any(i.kind == "owner" and i.path == "user_id" for i in invariants)
    for record in profile.tools["get_reservation_details"].result_examples:
        assert not violations(record, invariants, profile.now)
    broken = dict(profile.tools["get_reservation_details"].result_examples[0], created_at="2024-06-30T10:00:00")
    assert "created_at <= flights.*.date" in violations(broken, invariants, profile.now)


def test_planted_orders_total_the_sum_of_their_items():
    profile = build_profile(generate_planted(300, 0))
    assert "total = sum of items.*.price" in {i.describe() for i in profile.invariants["get_order_details"]}
    assert "delivered" in POLICY
