"""handoff_to_human: transfer when a segment has been flown, cancel it yourself otherwise."""

from __future__ import annotations

import pytest

from _family import committed_env, seed_where
from trace_envs.generate.policies import run_actions, run_policy
from trace_envs.generate.probes import probe_policy
from trace_envs.runtime.world import call

NAME = "airline_transfer_when_trip_flown"
READ, CANCEL, TRANSFER = "get_reservation_details", "cancel_reservation", "transfer_to_human_agents"


@pytest.fixture(scope="module")
def env_cls():
    return committed_env(NAME)


def test_flown_trips_need_a_human_and_always_transferring_does_not_win(env_cls):
    env = env_cls()
    now = env.SPEC.rules.now[:10]
    for seed in range(30):
        env.reset(seed=seed)
        b = env.scenario.bindings
        record = env.scenario.state["records"][b["target"]]
        flown = any(f["date"] < now for f in record["flights"])
        assert flown is (not b["self_service"])
    always = [run_policy(env, probe_policy("always_handoff"), seed)[0] for seed in range(50)]
    assert sum(always) / len(always) <= 0.6


def test_transfer_ends_the_episode(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: not s.bindings["self_service"])
    env.reset(seed=seed)
    target = env.scenario.bindings["target"]
    env.step(call(READ, reservation_id=target))
    obs, reward, terminated, truncated, info = env.step(call(TRANSFER, summary=f"{target}: a flown segment"))
    assert obs == "Transfer successful" and terminated and not truncated and reward == 1.0 and info["success"]


def test_planted_episodes_score_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: not s.bindings["self_service"])
    target = env.scenario.bindings["target"]
    read, cancel = call(READ, reservation_id=target), call(CANCEL, reservation_id=target)
    transfer = call(TRANSFER, summary=f"The user wants to cancel reservation {target}; a segment has been flown.")
    assert run_actions(env, [read, transfer], seed)[0] == 1.0
    # the summary a person takes over from names the record: "x", or a summary of another reservation, hands over
    # nothing (rl-envdoctor's corrupted oracle and falsepass's field echo were paid 1.0 for them)
    for summary in ["x", "A segment has already been flown.", f"The user wants to cancel reservation {target[:-1]}{'Z' if target.endswith('Q') else 'Q'}."]:
        score, info = run_actions(env, [read, call(TRANSFER, summary=summary)], seed)
        assert score == 0.0 and info["reward_breakdown"]["handed_off"] == 0.0, summary
    assert run_actions(env, [transfer], seed)[0] == 0.0  # without looking
    assert run_actions(env, [read, cancel, transfer], seed)[0] == 0.0  # cancelled a flown trip first
    seed = seed_where(env, lambda s: s.bindings["self_service"])
    target = env.scenario.bindings["target"]
    read, cancel = call(READ, reservation_id=target), call(CANCEL, reservation_id=target)
    assert run_actions(env, [read, transfer], seed)[0] == 0.0  # transferred what the agent could do
    ask = f"I'm about to cancel reservation {target}. Do you confirm (yes/no)?"
    assert run_actions(env, [read, ask, cancel, "Done. Have a nice day."], seed)[0] == 1.0
    # weights: write_target 2, read_first 1: cancelling without looking earns 2/3
    assert run_actions(env, [ask, cancel, "Done."], seed)[0] == pytest.approx(2 / 3)


def test_a_stranger_domains_transfer_topics_are_what_users_asked_not_their_ids(tmp_path):
    """Randomizer seed 18 (bank, dotted names, the request in the user's second turn): the topics were the sentences
    naming the record's key, which there were the users handing over their client id ("I know my client id, it's
    {target}."), and `exchange_rates.lookup` was taken for a write ("exchange"); now the topics are the sentences
    said before a transfer and seldom before anything else, and the deficit is recovered."""
    from _family import mine_random

    dom, caps = mine_random(18, tmp_path)
    ours = [c for c in caps if c["family"] == "handoff_to_human"]
    assert ours and "never_hands_over" in dom.score_recovery(caps)["found"]
    topics = ours[0]["params"]["topics"]
    assert topics and not any("client id" in t for t in topics)
    assert ours[0]["roles"]["write"] != "exchange_rates.lookup"


def test_a_stranger_domains_hand_off_about_a_record_not_the_users_id(tmp_path):
    """Held-out randomizer seed 50 (school, dotted names): users ask a person about an enrollment ("I want to appeal my
    final grade in enrollment EN-1") and hand over their student id too. The write the env offers as self-service was
    the most requested one, keyed by the student id, so every topic sentence held another id and none was learned
    ("nothing decides when a human is needed"); now the write is one on the record the requests name."""
    from _family import mine_random

    dom, caps = mine_random(50, tmp_path)
    ours = [c for c in caps if c["family"] == "handoff_to_human"]
    assert ours and "never_hands_over" in dom.score_recovery(caps)["found"]
    assert ours[0]["roles"]["key"] == "enrollment_id"
    assert any("{target}" in t for t in ours[0]["params"]["topics"])
