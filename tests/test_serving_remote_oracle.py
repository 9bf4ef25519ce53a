"""The docs' `RemoteEnv` loop as a new user runs it: play the oracle over `trace-envs serve`, stop on `terminated` or
`truncated`, and the episode scores 1.0. The env served is one whose oracle, on some seeds, goes one step past the
user's goodbye: a loop that does not stop there steps an ended episode, and that step must look the same over the wire
as in process (reward 0.0, no `reward_breakdown`), never a stale copy of the last one."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("openenv")
gym = pytest.importorskip("gymnasium")

import trace_envs  # noqa: E402,F401
from trace_envs.serving.health import free_port  # noqa: E402

from _servers import start_server  # noqa: E402

ENV = "trace/airline_cancel_every_requested_reservation"


def _overrunning_seed() -> int:
    """The first seed whose oracle has actions left after the user ended the conversation."""
    env = gym.make(ENV)
    for seed in range(40):
        env.reset(seed=seed)
        actions = env.unwrapped.oracle_actions()
        played = 0
        for action in actions:
            played += 1
            if any(env.step(action)[2:4]):
                break
        if played < len(actions):
            return seed
    pytest.fail(f"no seed of {ENV} below 40 has oracle actions past the episode's end; pick another env")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    port = free_port()
    err = tmp_path_factory.mktemp("serve") / "stderr.txt"
    proc = start_server([sys.executable, "-m", "trace_envs", "serve", ENV, "--port", str(port)], port, err,
                        OMP_NUM_THREADS="1")
    yield f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait()


def test_the_oracle_over_the_remote_client_scores_one(url):
    from trace_envs.serving.remote import RemoteEnv

    local = gym.make(ENV)
    remote = RemoteEnv(url)
    try:
        for seed in (0, _overrunning_seed()):
            local.reset(seed=seed)
            obs, info = remote.reset(seed=seed)
            for action in local.unwrapped.oracle_actions():
                obs, reward, terminated, truncated, info = remote.step(action)
                if terminated or truncated:
                    break
            assert (reward, terminated, truncated, info["success"]) == (1.0, True, False, True), seed
            assert set(info["reward_breakdown"].values()) == {1.0}
    finally:
        remote.close()


def test_a_step_past_the_end_is_the_in_process_one(url):
    from trace_envs.serving.remote import RemoteEnv

    seed = _overrunning_seed()
    local = gym.make(ENV)
    remote = RemoteEnv(url)
    try:
        assert remote.reset(seed=seed) == local.reset(seed=seed)
        actions = local.unwrapped.oracle_actions()
        for action in actions:
            assert remote.step(action) == local.step(action)
        # the last step stepped an ended episode: as in process, it pays nothing and carries no breakdown
        text, reward, terminated, _, info = remote.step(actions[-1])
        assert (text.startswith("The episode has ended"), reward, terminated) == (True, 0.0, True)
        assert "reward_breakdown" not in info and "success" not in info
    finally:
        remote.close()
