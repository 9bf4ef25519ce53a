"""Every capability mined from the real data sets (and the planted one) compiles into an env that passes the
full validation (oracle and chatty oracle 1.0, mutants below, every exploit probe within its bound, balanced
classes); on the airline domain an agent written from the policy text alone scores 1.0 on every seed. A proposal that
cannot make a sound env is left out with its reason, never published."""

from __future__ import annotations

from pathlib import Path

import pytest

from _family import airline_policy
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.policies import run_policy
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.mining.pipeline import MineOptions, mine
from trace_envs.spec.rules import load_rules
from trace_envs.trajectories.loaders import load_runs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = DATA / "tau2-bench" / "results"
# data set -> (files, domain, capabilities at least kept): tau2 retail's 12 failed runs show one major kind of failure
# (a requested write dropped), so two completion capabilities, and the variant pick another four runs show
# (pick_listed_options)
SETS = {
    "tau-bench-airline": ([DATA / "tau-bench" / "gpt-4o-airline.json"], "airline", 4),
    "tau2-airline": (sorted(RESULTS.glob("*airline*.json")), "airline", 3),
    "tau2-retail": (sorted(RESULTS.glob("*retail*.json")), "retail", 3),
    # the user, not the agent, fixes the device: two user-side capabilities (toggle_roaming with airplane mode or
    # mobile data), learned from the user's own check texts
    "tau2-telecom": ([DATA / "tau2-bench" / "telecom-results" / "gpt-4.1_telecom.json"], "telecom", 2),
    "planted": (None, "planted", 8),
}


# Mined as most users will, without a rules file: a gate learned from the runs must not contradict the policy the env
# shows (issue 25). tau2 airline keeps its refusal of an unwarranted cancellation only with the rules file: the
# policy's cancellation section also names business class, so insurance alone, as the runs show it, is no rule.
BARE = {"tau-bench-airline-bare": ("tau-bench-airline", 7), "tau2-airline-bare": ("tau2-airline", 3)}


@pytest.mark.parametrize("name", sorted([*SETS, *BARE]))
def test_every_mined_capability_passes_the_extended_validation(name, tmp_path, planted_envs):
    bare = name in BARE
    paths, domain, at_least = SETS[BARE[name][0]] if bare else SETS[name]
    at_least = BARE[name][1] if bare else at_least
    if domain == "planted":  # mined and published once per test run for this test and the construct validity one
        result, published, out = planted_envs("retail")
    else:
        rules_file = ROOT / "examples" / "rules" / f"{domain}.yaml"
        rules = load_rules(rules_file) if rules_file.exists() and not bare else None
        runs = load_runs(paths).runs
        result, out = mine(runs, options=MineOptions(), rules=rules), tmp_path
        published = {spec.name: generate_one(spec, out) for spec in result.capabilities}
    assert len(result.capabilities) >= at_least, [c.name for c in result.capabilities]
    assert all(": " in w for w in result.warnings if w.startswith("not proposed"))  # each with its reason
    failures = []
    for spec in result.capabilities:
        if not published[spec.name].published:
            failures.append(f"{spec.name}: {published[spec.name].error}")
            continue
        if domain == "airline":
            # the agent written from the policy text alone, not by the families' authors, tests the envs
            env = env_class(import_module_from(out / spec.name / MODULE_FILE))()
            policy = airline_policy("airline_literal.py")
            low = min(run_policy(env, policy, seed)[0] for seed in range(10))
            if low < 1.0:
                failures.append(f"{spec.name}: the airline policy agent scored {low:.2f}")
    assert not failures, "\n".join(failures)


def test_a_gate_the_policy_names_more_conditions_for_is_not_learned_from_the_runs():
    """tau2 airline without a rules file: the passed runs cancel insured reservations and leave the others, but the
    policy's "Cancel flight" section also allows any business flight; a refusal env on insurance alone would punish an
    agent that cancels a business reservation as the policy says. It is not kept, and the warning says what would
    settle it. The flight change's gate is the policy's ("Basic economy flights cannot be modified"), not the runs'
    business-only one."""
    result = mine(load_runs(SETS["tau2-airline"][0]).runs, options=MineOptions(), rules=None)
    assert "no_unwarranted_cancel_reservation" not in [c.name for c in result.capabilities]
    why = next(w for w in result.warnings if "no_unwarranted_cancel_reservation" in w)
    assert "the policy's section on it also names cabin business," in why and "--rules FILE" in why, why
    changes = [c for c in result.capabilities if c.rules.rule("update_reservation_flights")]
    assert changes
    for spec in changes:
        (gate,) = spec.rules.rule("update_reservation_flights").requires
        assert (gate.path, sorted(gate.value)) == ("cabin", ["business", "economy"]), spec.name
