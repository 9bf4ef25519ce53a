"""Per-turn rewards (`gym.make(id, reward_mode="per_turn")`): each step pays the change of the check's score it caused.

Over oracle, random and mutant episodes of every committed env, the per-turn rewards sum to exactly the reward the
same actions earn in terminal mode, and on every prefix to exactly the score of the trace so far (`info["score"]`);
the episode itself (observations, flags) is the terminal-mode one. The content-free probes earn no more on any prefix
than at the end. A clause paid and later undone is taken back on the step that undid it. Terminal mode is today's
behaviour and scores the last step only. `trace-envs serve --reward-mode per_turn` serves the same rewards.
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction

import gymnasium as gym
import numpy as np
import pytest

import trace_envs  # noqa: F401  (registers the committed envs)
from _reliability import committed_envs
from trace_envs.generate.policies import random_action, random_value, run_policy
from trace_envs.generate.probes import PROBES, probe_policy
from trace_envs.runtime.base import REWARD_MODES, _increment

ENVS = committed_envs()
CLOSING = "Thank you, that is all from my side. Goodbye."
ODD = ["yes", "no", "Do you confirm that I should proceed (yes/no)?", "Is there anything else I can help with?",
       '{"name": "no_such_tool", "arguments": {}}', '{"name": ', "<tool_call>[1, 2]</tool_call>", CLOSING]


def _calls(actions: list[str]) -> list[dict]:
    out = []
    for action in actions:
        try:
            parsed = json.loads(action)
        except ValueError:
            continue
        if isinstance(parsed, dict) and "name" in parsed:
            out.append(parsed)
    return out


def reaches(paid: float, reward: float, score: float) -> bool:
    """`paid + reward` is `score`: exactly wherever a float reward can make it so (the exact difference is a float),
    else the nearest float, within 2**-53 (see `trace_envs.runtime.base._increment`)."""
    if Fraction(score) - Fraction(paid) == Fraction(score - paid):
        return paid + reward == score
    return abs(paid + reward - score) <= 2**-53


def random_policy(env, rng: np.random.Generator, turn: int) -> str:
    """Random actions: type-correct random tool calls, text from the action space, odd messages, the oracle's own
    actions out of order, and the oracle's calls with one argument replaced (by a random value of its type or an id
    seen in the conversation), sometimes two calls in one action."""
    oracle = env.oracle_actions()
    u = rng.random()
    if u < 0.25:
        return random_action(env, rng, turn)
    if u < 0.35:
        env.action_space.seed(int(rng.integers(2**31)))
        return env.action_space.sample(mask=(int(rng.integers(1, 200)), None))
    if u < 0.45:
        return ODD[int(rng.integers(len(ODD)))]
    if u < 0.7 and oracle:
        return oracle[int(rng.integers(len(oracle)))]
    calls = _calls(oracle)
    if not calls:
        return random_action(env, rng, turn)
    picked = [dict(calls[int(rng.integers(len(calls)))]) for _ in range(1 + int(rng.random() < 0.2))]
    for c in picked:
        args = dict(c.get("arguments") or {})
        if args:
            name = list(args)[int(rng.integers(len(args)))]
            tool = next((t for t in env.tool_specs if t.name == c["name"]), None)
            ids = [tok for m in env.messages if isinstance(m.get("content"), str)
                   for tok in m["content"].split() if any(ch.isdigit() for ch in tok)]
            if ids and rng.random() < 0.5:
                args[name] = ids[int(rng.integers(len(ids)))].strip(".,;:!?\"'()")
            else:
                args[name] = random_value(tool.properties.get(name, {}) if tool else {}, rng)
        c["arguments"] = args
    return json.dumps(picked[0] if len(picked) == 1 else picked)


def scripted(actions: list[str]):
    """A policy that plays `actions`, then says goodbye until the episode ends."""
    def policy(env, rng, turn):
        return actions[turn - 1] if turn <= len(actions) else CLOSING
    return policy


def play(env_id: str, seed: int, policy, *, sample: int = 0) -> tuple[list[str], list[tuple], float]:
    """Play `policy` on a per-turn env to the end; returns (the actions, each step's (obs, reward, terminated,
    truncated, info), the terminal score the env computes)."""
    env = gym.make(env_id, reward_mode="per_turn")
    base = env.unwrapped
    env.reset(seed=seed)
    rng = np.random.default_rng([seed, sample, 7])
    actions, steps = [], []
    paid = 0.0
    for turn in range(1, 1000):
        action = policy(base, rng, turn)
        actions.append(action)
        out = env.step(action)
        steps.append(out)
        # every prefix: the rewards so far are the score of the trace so far, whose clauses info carries
        assert reaches(paid, out[1], out[4]["score"]), (env_id, seed, turn, paid, out[1], out[4]["score"])
        paid += out[1]
        assert set(out[4]["reward_breakdown"]) == set(base.score().breakdown)
        if out[2] or out[3]:
            break
    assert steps[-1][2] or steps[-1][3], "the episode never ended"
    final = base.score().score
    env.close()
    return actions, steps, final


def replay_terminal(env_id: str, seed: int, actions: list[str]) -> list[tuple]:
    env = gym.make(env_id)
    env.reset(seed=seed)
    steps = [env.step(a) for a in actions]
    env.close()
    return steps


def check_episode(env_id: str, seed: int, policy, sample: int = 0) -> float:
    """Per-turn rewards sum to exactly the terminal-mode reward of the same actions; the episode is the same."""
    actions, per_turn, final = play(env_id, seed, policy, sample=sample)
    terminal = replay_terminal(env_id, seed, actions)
    paid = sum(s[1] for s in per_turn[:-1])
    assert terminal[-1][1] == final and reaches(paid, per_turn[-1][1], final), (
        env_id, seed, [s[1] for s in per_turn], terminal[-1][1])
    assert [(s[0], s[2], s[3]) for s in per_turn] == [(s[0], s[2], s[3]) for s in terminal]
    assert all(s[1] == 0.0 for s in terminal[:-1])
    assert per_turn[-1][4]["reward_breakdown"] == terminal[-1][4]["reward_breakdown"]
    assert per_turn[-1][4]["success"] == terminal[-1][4]["success"]
    return final


@pytest.mark.parametrize("name", ENVS)
def test_oracle_random_and_mutant_episodes_sum_to_the_terminal_reward(name):
    """The quick lane's share: one seed of each kind per env."""
    env_id = f"trace/{name}"
    assert check_episode(env_id, 0, lambda env, rng, turn: (env.oracle_actions() + [CLOSING] * 99)[turn - 1]) == 1.0
    check_episode(env_id, 0, random_policy)
    env = gym.make(env_id).unwrapped
    env.reset(seed=1)
    for actions in env.mutant_actions().values():
        check_episode(env_id, 1, scripted(actions))


def test_a_thousand_episodes_sum_to_the_terminal_reward():
    """Oracle, random and mutant episodes over every committed env, at least 1,000 of them."""
    episodes, scores = 0, []
    for name in ENVS:
        env_id = f"trace/{name}"
        for seed in range(16):
            oracle = gym.make(env_id).unwrapped
            oracle.reset(seed=seed)
            assert check_episode(env_id, seed, scripted(oracle.oracle_actions())) == 1.0
            episodes += 1
        for seed in range(32):
            scores.append(check_episode(env_id, seed, random_policy, sample=1))
            episodes += 1
        env = gym.make(env_id).unwrapped
        for seed in range(3):
            env.reset(seed=seed)
            for actions in env.mutant_actions().values():
                scores.append(check_episode(env_id, seed, scripted(actions)))
                episodes += 1
    assert episodes >= 1000, episodes
    # the random and mutant episodes earn scores of every kind, not 0.0 throughout
    assert len({round(s, 6) for s in scores}) >= 5 and 0.0 < float(np.mean(scores)) < 1.0


def test_content_free_probes_earn_no_more_on_any_prefix_than_at_the_end():
    """What a probe has been paid after any step is at most what it ends with (and so at most what terminal mode
    gives it): a probe that earns nothing at the end is never paid on the way. The probes that play the oracle's own
    actions up to one wrong write (`field_hedge`, `prose_value`) are left out: their prefix is the oracle's, rightly paid
    what the oracle is paid there (asking, on a seed whose user declines), and the wrong write takes it back."""
    oracle_prefixed = {"field_hedge", "prose_value"}
    content_free = [n for n, p in PROBES.items() if p.kind == "content_free" and n not in oracle_prefixed]
    for name in ENVS:
        env_id = f"trace/{name}"
        for probe in content_free:
            for seed in range(3):
                _, steps, final = play(env_id, seed, probe_policy(probe))
                paid, worst = 0.0, 0.0
                for s in steps:
                    paid += s[1]
                    worst = max(worst, s[4]["score"])
                assert worst <= final, (name, probe, seed, [s[1] for s in steps], final)


def test_a_declined_write_is_taken_back_on_the_step_that_made_it():
    """The user says no: the question was right and is paid on the step that asks; writing anyway takes it back on
    the write's own step."""
    env = gym.make("trace/airline_confirm_before_baggage_update", reward_mode="per_turn")
    base = env.unwrapped
    seed = next(s for s in range(200) if (base.reset(seed=s), base.scenario.bindings["declined"])[1])
    env.reset(seed=seed)
    read, question, _ = base.oracle_actions()
    write = next(a for a in base.mutant_actions()["forbidden_extra_call"] if '"update_reservation_baggages"' in a)
    rewards, infos = [], []
    for action in [read, question, write, "Understood. Have a nice day."]:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
    assert terminated and not truncated
    assert rewards[:2] == [0.0, 1.0] and infos[1]["reward_breakdown"] == {
        "asked": 1.0, "no_write_declined": 1.0, "arguments_bound": 1.0}
    assert rewards[2] == -1.0 and infos[2]["reward_breakdown"]["no_write_declined"] == 0.0
    assert rewards[3] == 0.0 and sum(rewards) == 0.0 == infos[-1]["score"] == replay_terminal(
        "trace/airline_confirm_before_baggage_update", seed, [read, question, write, "Understood. Have a nice day."])[-1][1]


def test_a_second_payment_takes_the_first_back():
    """The oracle's payment is paid on its step; the forbidden extra write zeroes the check on its own step."""
    env_id = "trace/helpdesk_pay_open_invoices"
    env = gym.make(env_id, reward_mode="per_turn")
    env.reset(seed=0)
    actions = env.unwrapped.mutant_actions()["forbidden_extra_call"]
    rewards, breakdowns = [], []
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        breakdowns.append(info["reward_breakdown"])
        if terminated or truncated:
            break
    paid_at = next(i for i, r in enumerate(rewards) if r > 0)
    assert rewards[paid_at] == 1.0 and breakdowns[paid_at]["paid_the_sum"] == 1.0
    assert rewards[paid_at + 1] == -1.0 and breakdowns[paid_at + 1]["no_other_write"] == 0.0
    assert sum(rewards) == 0.0


def test_terminal_mode_is_unchanged_and_scores_the_last_step_only(monkeypatch):
    env = gym.make("trace/airline_check_cabin_before_cancel")
    base = env.unwrapped
    assert base.reward_mode == "terminal"
    calls = []
    real = type(base).score
    monkeypatch.setattr(type(base), "score", lambda self: calls.append(1) or real(self))
    env.reset(seed=1)
    steps = [env.step(a) for a in base.oracle_actions()]
    assert len(calls) == 1 and steps[-1][1] == 1.0 and all(s[1] == 0.0 for s in steps[:-1])
    assert all("score" not in s[4] and "reward_breakdown" not in s[4] for s in steps[:-1])


def test_run_policy_returns_the_episode_return_in_both_modes():
    """The validation harness adds up a per-turn episode's rewards, so both modes give the same score."""
    for mode in REWARD_MODES:
        env = gym.make("trace/helpdesk_pay_open_invoices", reward_mode=mode).unwrapped
        got = [run_policy(env, random_policy, seed)[0] for seed in range(4)]
        want = [run_policy(gym.make("trace/helpdesk_pay_open_invoices").unwrapped, random_policy, seed)[0]
                for seed in range(4)]
        assert got == want


@pytest.mark.parametrize("bad", ["perturn", "PER_TURN", "", None, 1])
def test_an_unknown_reward_mode_names_the_allowed_ones(bad):
    with pytest.raises(ValueError, match=r"reward_mode must be one of 'terminal', 'per_turn'"):
        gym.make("trace/helpdesk_pay_open_invoices", reward_mode=bad)


def test_increments_add_up_exactly_on_every_prefix():
    """Whatever the scores along an episode, adding the rewards in order gives each score: exactly wherever a float
    can (always, for scores that are multiples of a power of two, as weights 1 and 3 give), else its nearest float."""
    rng = np.random.default_rng(0)
    pools = {"uniform": rng.random(2000), "thirds and tenths": np.array([0, 1 / 3, 2 / 3, 0.1, 0.7, 1 / 7, 1, 0.3]),
             "twelfths": rng.integers(0, 13, 2000) / 12, "eighths": rng.integers(0, 9, 2000) / 8}
    for name, pool in pools.items():
        for _ in range(300):
            paid = 0.0
            for score in map(float, rng.choice(pool, size=int(rng.integers(1, 30)))):
                reward = _increment(paid, score)
                assert math.isfinite(reward) and reaches(paid, reward, score), (name, paid, reward, score)
                assert name != "eighths" or paid + reward == score
                paid += reward
    assert _increment(2 / 3, 2 / 3) == 0.0 and _increment(0.25, 1.0) == 0.75
    assert 1.0 + _increment(1.0, 1 / 3) != 1 / 3  # no float does it: the sum is 1/3's nearest neighbour


def test_serving_builds_every_session_with_the_mode():
    pytest.importorskip("openenv")
    from trace_envs.serving.server import SessionEnv, build_app
    from trace_envs.serving.remote import TraceAction

    session = SessionEnv("trace/helpdesk_pay_open_invoices", reward_mode="per_turn")
    session.reset(seed=0)
    env = gym.make("trace/helpdesk_pay_open_invoices", reward_mode="per_turn")
    env.reset(seed=0)
    for action in env.unwrapped.mutant_actions()["forbidden_extra_call"]:
        served = session.step(TraceAction(text=action, transcript=True))  # the step's whole info
        _, reward, terminated, truncated, info = env.step(action)
        assert served.reward == reward and served.info["score"] == info["score"]
        if terminated or truncated:
            break
    with pytest.raises(ValueError, match="reward_mode must be one of"):
        build_app("trace/helpdesk_pay_open_invoices", env_kwargs={"reward_mode": "turns"})


def test_serve_command_line_reward_mode_per_turn(tmp_path):
    """`trace-envs serve --reward-mode per_turn`: a remote episode is the in-process per-turn episode, reward by
    reward; a mode that does not exist is one error line."""
    pytest.importorskip("openenv")
    import subprocess

    from _servers import start_server
    from trace_envs.serving.health import free_port
    from trace_envs.serving.remote import RemoteEnv

    env_id = "trace/airline_confirm_before_baggage_update"
    bad = subprocess.run([sys.executable, "-m", "trace_envs", "serve", env_id, "--reward-mode", "turns"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--reward-mode must be one of terminal, per_turn" in bad.stderr
    port = free_port()
    proc = start_server([sys.executable, "-m", "trace_envs", "serve", env_id, "--port", str(port),
                         "--reward-mode", "per_turn"], port, tmp_path / "stderr.txt", OMP_NUM_THREADS="1")
    remote = None
    try:
        remote = RemoteEnv(f"http://127.0.0.1:{port}")
        local = gym.make(env_id, reward_mode="per_turn")
        for seed in range(4):
            local.reset(seed=seed)
            for actions in [local.unwrapped.oracle_actions(), local.unwrapped.mutant_actions()["forbidden_extra_call"]]:
                assert remote.reset(seed=seed) == local.reset(seed=seed)
                for action in actions:
                    got, want = remote.step(action), local.step(action)
                    assert got == want
                    if want[2] or want[3]:
                        break
        assert "reward_mode='per_turn'" in (tmp_path / "stderr.txt").read_text()
    finally:
        if remote is not None:
            remote.close()
        proc.kill()
        proc.wait()
