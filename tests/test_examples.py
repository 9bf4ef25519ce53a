"""The examples run as a user would run them: the custom (non-TRL) REINFORCE loop on CPU with the `tiny` model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("mode", [[], ["--per-turn"]], ids=["terminal", "per_turn"])
def test_custom_reinforce_loop_runs_with_tiny_model(mode):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "custom_loop_reinforce.py"), "--model", "tiny", "--iterations", "2",
         "--group", "2", "--max-turns", "2", "--max-new-tokens", "16", *mode],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("iteration ")]
    assert len(lines) == 2 and all("mean reward" in line and ("per step" in line) == bool(mode) for line in lines)


def test_custom_loop_credits_each_step_with_its_reward_to_go():
    """Terminal: every step gets the episode's advantage. Per turn: each step's reward-to-go against the group's at
    the same step index, so the steps up to the write that took a clause back (-1 on step 2) lose what the other
    episode kept, and the last step, after which neither episode earned anything, gets no credit."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import custom_loop_reinforce as loop
    finally:
        sys.path.remove(str(ROOT / "examples"))
    assert loop.rewards_to_go([0.0, 1.0, -1.0, 0.0]) == [0.0, 0.0, -1.0, 0.0]
    assert loop.advantages([[0.0, 0.0, 1.0], [0.0, 0.0]], per_turn=False) == [[0.5] * 3, [-0.5] * 2]
    took_back, kept = [0.0, 1.0, -1.0, 0.0], [0.0, 1.0, 0.0, 0.0]
    assert loop.advantages([took_back, kept], per_turn=True) == [[-0.5, -0.5, -0.5, 0.0], [0.5, 0.5, 0.5, 0.0]]
    assert loop.advantages([[0.0, 1.0], [0.0, 1.0]], per_turn=True) == [[0.0, 0.0], [0.0, 0.0]]
    # terminal rewards through the per-turn formula: the same credit at every step while the episodes last
    assert loop.advantages([[0.0, 1.0], [0.0, 0.0]], per_turn=True) == loop.advantages([[0.0, 1.0], [0.0, 0.0]], False)


def test_custom_loop_updates_the_model_when_rewards_differ():
    """One REINFORCE step with rewards that differ within the group moves the weights."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import torch

        import custom_loop_reinforce as loop
        from adapters_train.models import resolve_model

        loaded = resolve_model("tiny")
        before = [p.detach().clone() for p in loaded.model.parameters()]
        opt = torch.optim.AdamW(loaded.model.parameters(), lr=1e-2)
        messages = [{"role": "user", "content": "hello"}]
        _, lp1 = loop.act(loaded.model, loaded.tokenizer, messages, [], 4)
        _, lp2 = loop.act(loaded.model, loaded.tokenizer, messages, [], 4)
        loss = -(0.5 * lp1 - 0.5 * lp2)
        loss.backward()
        opt.step()
        assert any(not torch.equal(a, b.detach()) for a, b in zip(before, loaded.model.parameters()))
    finally:
        sys.path.remove(str(ROOT / "examples"))
