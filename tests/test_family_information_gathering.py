"""information_gathering: ask for the reservation id (under any common name), read it, answer from the record."""

from __future__ import annotations

import pytest

from _family import committed_env
from trace_envs.generate.policies import run_actions
from trace_envs.runtime.world import call

NAME = "airline_ask_for_reservation_id"
READ = "get_reservation_details"


@pytest.fixture(scope="module")
def env_cls():
    return committed_env(NAME)


def test_the_user_gives_the_key_when_asked_for_it_by_any_name(env_cls):
    env = env_cls()
    for seed in range(20):
        env.reset(seed=seed)
        assert env.scenario.bindings["target"] not in env.opening
    for question in ("Could you give me your booking reference?", "What's the confirmation code?",
                     "Could you give me your reservation number please?", "What is your reservation ID?"):
        env.reset(seed=3)
        reply, ended = env.say(question)
        assert env.scenario.bindings["target"] in reply and not ended, question


def test_planted_episodes_score_exactly(env_cls):
    env = env_cls()
    env.reset(seed=4)
    b = env.scenario.bindings
    target, answer = b["target"], b["answer"]
    ask = "Could you please tell me your reservation id?"
    said = f"The flight number of the first flight of reservation {target} is {answer}. Have a nice day."
    read = call(READ, reservation_id=target)
    assert run_actions(env, [ask, read, said], seed=4)[0] == 1.0
    # writing anything zeroes the score
    assert run_actions(env, [ask, read, call("cancel_reservation", reservation_id=target), said], seed=4)[0] == 0.0
    # weights: answered 2, asked_for_key 1: reading with the right id before asking for it is a guess
    score, info = run_actions(env, env.mutant_actions()["swap_calls"], seed=4)
    assert score == pytest.approx(2 / 3) and info["reward_breakdown"]["asked_for_key"] == 0.0
    # a guessed id, even one that does not exist, is a read of a record the user did not give
    guess = call(READ, reservation_id="ZZ9ZZZ")
    assert run_actions(env, [guess, ask, read, said], seed=4)[0] == 0.0
    # the answer given before the lookup earns nothing
    assert run_actions(env, [ask, said.replace(" Have a nice day.", " Anything else?"), read], seed=4)[0] == 0.0


@pytest.mark.parametrize("seed, read, lookup", [(10, "showLoan", "showMember"),
                                                (4, "readPatientAppointments", "readPatient")])
def test_a_record_picked_among_several_the_user_never_named_is_lacking(seed, read, lookup):
    """Randomized seeds 10 (a loan read by its id) and 4 (a patient's appointments read as one list): the user asks
    about "one of my loans"; the agent that asks which one and reads the one named is PRESENT, the one that answers
    from the first on the profile is LACKING, whether or not that was the one meant. Reads of the user's profile (its
    id list) and runs whose user named the record never lack it."""
    from trace_envs.checks.run_view import RunView
    from trace_envs.datasets.randomized import random_domain
    from trace_envs.mining.label import label_view
    from trace_envs.mining.propose_offline import propose_offline
    from trace_envs.trajectories.profile import build_profile

    runs = random_domain(seed).runs()
    profile = build_profile(runs)
    kinds = {n: t.kind for n, t in profile.tools.items()}
    cands = {c.spec.roles["read"]: c for c in propose_offline(profile, runs) if c.spec.family == "information_gathering"}
    assert {label_view(cands[lookup], RunView(r, kinds)) for r in runs} == {"NA"}
    cand = cands[read]
    right = []
    for run in runs:
        truth = run.meta["planted"]
        label = label_view(cand, RunView(run, kinds))
        if truth["task_kind"] != "information_gathering":
            assert label in ("NA", "PRESENT"), run.run_id
        elif truth["deficits"]:
            assert label == "LACKING", run.run_id
        else:  # a guess that happened to be the record meant lacks it too
            right.append(label)
    assert right.count("PRESENT") > len(right) / 2 and "NA" not in right
