"""multi_request_completion: every request handled, the one the policy forbids refused with its reason."""

from __future__ import annotations

import json

import pytest

from _family import committed_example, seed_where
from trace_envs.families import env_check
from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.generate.publish import generate_one
from trace_envs.runtime.world import call

NAME = "airline_cancel_every_requested_reservation"
READ, CANCEL = "get_reservation_details", "cancel_reservation"


@pytest.fixture(scope="module")
def published():
    return committed_example(NAME)


def test_every_request_is_in_the_opening_and_half_hold_one_the_policy_forbids(published):
    _, cls = published
    env = cls()
    blocked = 0
    for seed in range(50):
        env.reset(seed=seed)
        b = env.scenario.bindings
        assert len(b["targets"]) == 3 and all(t in env.opening for t in b["targets"])
        owners = {env.scenario.state["records"][t]["user_id"] for t in b["targets"]}
        assert owners == {env.scenario.facts["user id"]}  # one user's reservations, as in the real runs
        if b["one_blocked"]:
            blocked += 1
            assert b["blocked"] in b["targets"] and b["blocked"] not in b["allowed_targets"]
    assert 0.4 <= blocked / 50 <= 0.6


def _ask(*targets: str) -> str:
    return f"I'm about to cancel reservation {' and '.join(targets)}. Do you confirm that I should proceed (yes/no)?"


def test_planted_episodes_score_exactly(published):
    _, cls = published
    env = cls()
    seed = seed_where(env, lambda s: not s.bindings["one_blocked"])
    targets = env.scenario.bindings["allowed_targets"]
    assert run_scripted(env, "oracle", seed)[0] == 1.0
    # weights: all_requests 3, read_first 1 (gated on all_requests): reading and cancelling only the first reservation
    # earns (1/3 * 3 + 0) / 4, below half (the planted stops-after-first agent must score < 0.5)
    first = [call(READ, reservation_id=targets[0]), _ask(targets[0]), call(CANCEL, reservation_id=targets[0]),
             "Done. Goodbye."]
    score, info = run_actions(env, first, seed)
    assert info["reward_breakdown"]["all_requests"] == pytest.approx(1 / 3) and score == pytest.approx(0.25)
    assert info["reward_breakdown"]["read_first"] == 0.0
    # the policy asks for a yes before every write: every cancellation done, one question for all three, earns 1.0;
    # the same without the question, nothing
    reads = [call(READ, reservation_id=t) for t in targets]
    cancels = [call(CANCEL, reservation_id=t) for t in targets]
    assert run_actions(env, [*reads, _ask(*targets), *cancels, "Done. Goodbye."], seed)[0] == 1.0
    score, info = run_actions(env, [*reads, *cancels, "Done. Goodbye."], seed)
    assert score == 0.0 and info["reward_breakdown"]["confirmed_writes"] == 0.0
    # three cancellations that each returned an error complete nothing (the env paid 1.0 for these)
    errored = [call(CANCEL, reservation_id=t, reason="change of plan") for t in targets] + ["All three cancelled."]
    score, info = run_actions(env, errored, seed)
    assert score == 0.0 and "error" in json.loads(info["messages"][3]["content"])


def test_the_forbidden_request_must_be_refused(published):
    _, cls = published
    env = cls()
    seed = seed_where(env, lambda s: s.bindings["one_blocked"])
    b = env.scenario.bindings
    assert run_scripted(env, "oracle", seed)[0] == 1.0
    # cancelling every listed reservation, the forbidden one included, zeroes the score
    every = [a for t in b["targets"] for a in (call(READ, reservation_id=t), call(CANCEL, reservation_id=t))]
    score, info = run_actions(env, [*every, "All cancelled."], seed)
    assert score == 0.0 and info["reward_breakdown"]["no_other_write"] == 0.0
    # doing every allowed cancellation but saying nothing of the forbidden one leaves a request unresolved: the
    # allowed writes count only once the forbidden one was refused with its reason (weights: explained 1, allowed 3,
    # read first 1)
    allowed = [a for t in b["allowed_targets"] for a in (call(READ, reservation_id=t), _ask(t),
                                                          call(CANCEL, reservation_id=t))]
    score, info = run_actions(env, [*allowed, "Done. Goodbye."], seed)
    assert score == 0.0 and info["reward_breakdown"]["allowed_requests"] == 0.0
    refusal = (f"I'm sorry, I can't cancel reservation {b['blocked']}: its cabin is {b['reason_words']}, and only "
               "business reservations may be cancelled.")
    score, _ = run_actions(env, [*allowed, call(READ, reservation_id=b["blocked"]), refusal, "Goodbye."], seed)
    assert score == 1.0


def test_check_size_must_match_requests(published, tmp_path):
    spec, _ = published
    wrong = spec.model_copy(update={"check": env_check(spec.family, spec.roles, spec.params, requests=2)}).with_hash()
    result = generate_one(wrong, tmp_path)
    assert not result.published and "knobs.requests" in result.error


@pytest.mark.parametrize("n", [1, 6])
def test_other_request_counts(published, tmp_path, n):
    spec, _ = published
    knobs = spec.knobs.model_copy(update={"requests": n})
    other = spec.model_copy(
        update={"knobs": knobs, "check": env_check(spec.family, spec.roles, spec.params, requests=n)}
    ).with_hash()
    result = generate_one(other, tmp_path, seeds=10)
    assert result.published, result.error
