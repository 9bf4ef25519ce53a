"""An airline agent written from the policy text and the tool schemas alone (examples/policy_agents/airline_literal.py,
never from the family code) scores 1.0 on every seed of the bundled airline envs and of the envs mined from the
tau-bench airline runs (with the rules file and without it) and from the tau2-bench airline runs: no scenario asks
for what the shown policy forbids.

Before the scenario records were judged against the dates the policy states, the env mined without rules as
`no_unwarranted_cancel_reservation` asked, on 6 of 30 seeds, for a cancellation of a trip whose flights were dated
2024-05-13 and 2024-05-14 while the policy says "The current time is 2024-05-15 15:00:00" and "If any of the segments
are already used, the agent cannot help and transfer is needed": this agent scored 0.80 on it. The flight searches
listed flights with fewer seats in the cabin than the reservation has passengers as the one to book (0.90 on the
bundled `airline_pick_flight_meeting_constraints`), and the mined `pick_listed_options` replaced a round trip's four
flights with one direct flight, against "without changing the origin, destination, and trip type" (0.00).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.policies import run_policy
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.mining.pipeline import MineOptions, mine
from trace_envs.runtime.world import decide, time_neutral
from trace_envs.spec.io import load_specs
from trace_envs.spec.rules import load_rules
from trace_envs.trajectories.loaders import load_runs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
TAU = [DATA / "tau-bench" / "gpt-4o-airline.json"]
TAU2 = sorted((DATA / "tau2-bench" / "results").glob("*airline*.json"))
AGENT = ROOT / "examples" / "policy_agents" / "airline_literal.py"
SEEDS = 25
BUNDLED = sorted(p.name for p in (ROOT / "generated").iterdir() if p.name.startswith("airline_"))
# The record of the issue: a trip flown on 2024-05-13 and 2024-05-14, booked on 2024-05-13.
FLOWN = {
    "reservation_id": "OK7F70", "user_id": "omar_davis_9569", "cabin": "business", "insurance": "yes",
    "created_at": "2024-05-13T05:37:57", "flight_type": "one_way", "origin": "MCO", "destination": "SEA",
    "flights": [{"date": "2024-05-13", "flight_number": "HAT214", "origin": "MCO", "destination": "PHX", "price": 1377},
                {"date": "2024-05-14", "flight_number": "HAT045", "origin": "PHX", "destination": "SEA", "price": 1712}],
    "passengers": [{"dob": "1981-05-26", "first_name": "Aarav", "last_name": "Ahmed"}],
    "payment_history": [{"amount": 3089, "payment_id": "credit_card_4959530"}],
}


def literal_policy():
    name = "trace_envs_example_airline_literal"
    spec = importlib.util.spec_from_file_location(name, AGENT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.make_policy()


def lowest(cls, seeds: int = SEEDS) -> tuple[float, list[int]]:
    scores = [run_policy(cls(), literal_policy(), seed)[0] for seed in range(seeds)]
    return min(scores), [s for s, r in enumerate(scores) if r < 1.0]


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> dict[str, Path]:
    """The capabilities mined from the tau-bench airline runs with the airline rules file and without one, and from
    the tau2-bench airline runs with it, generated without validation (test_mined_specs_generate validates them):
    label -> env folder."""
    out: dict[str, Path] = {}
    rules = load_rules(ROOT / "examples" / "rules" / "airline.yaml")
    for label, paths, given in (("rules", TAU, rules), ("no-rules", TAU, None), ("tau2", TAU2, rules)):
        folder = tmp_path_factory.mktemp(label)
        for spec in mine(load_runs(paths).runs, options=MineOptions(), rules=given).capabilities:
            assert generate_one(spec, folder, validate=False).published
            out[f"{label}/{spec.name}"] = folder / spec.name
    return out


def test_the_flown_trip_of_the_issue_is_decided_by_no_scenario():
    spec = load_specs(ROOT / "generated" / "airline_check_cabin_before_cancel" / "spec.json")[0]
    bare = spec.model_copy(update={"rules": spec.rules.model_copy(update={"writes": []})})
    assert not time_neutral(bare, FLOWN)
    assert decide(bare, "cancel_reservation", FLOWN, None) == "undecided"
    # The rules file's own handoff condition decides it: a human is needed.
    assert decide(spec, "cancel_reservation", FLOWN, None) == "handoff"
    later = {**FLOWN, "created_at": "2024-05-01T10:00:00",
             "flights": [dict(f, date=d) for f, d in zip(FLOWN["flights"], ["2024-05-20", "2024-05-21"])]}
    assert time_neutral(bare, later)
    assert decide(bare, "cancel_reservation", later, None) == "allowed"  # no rule: the gate alone (none) allows
    # Booked within the 24 hours the policy text names: a date rule would decide it.
    assert not time_neutral(bare, {**later, "created_at": "2024-05-15T09:00:00"})


@pytest.mark.parametrize("name", BUNDLED)
def test_literal_agent_scores_one_on_every_seed_of_the_bundled_env(name):
    cls = env_class(import_module_from(ROOT / "generated" / name / MODULE_FILE))
    low, bad = lowest(cls)
    assert low == 1.0, f"{name}: lowest {low:.2f} on seeds {bad}"


def test_literal_agent_scores_one_on_every_seed_of_the_mined_envs(mined):
    # Without rules, gates come from the runs where a policy sentence backs them ("Basic economy flights cannot be
    # modified"): before, the flight-change envs gated on `insurance` (0.32 with this agent) and the option env drew
    # basic-economy trips to change (0.00).
    assert {"rules/no_unwarranted_cancel_reservation", "no-rules/no_unwarranted_cancel_reservation",
            "rules/complete_every_update_reservation_flights", "rules/pick_listed_options",
            "no-rules/complete_every_update_reservation_flights", "no-rules/pick_listed_options",
            "rules/compute_every_amount", "tau2/no_unwarranted_cancel_reservation"} <= set(mined)
    failures = []
    for label, folder in sorted(mined.items()):
        low, bad = lowest(env_class(import_module_from(folder / MODULE_FILE)))
        if low < 1.0:
            failures.append(f"{label}: lowest {low:.2f} on seeds {bad}")
    assert not failures, "\n".join(failures)
