"""Determinism: the same seed and actions give byte-identical episodes, within a process and across processes.

For every committed env (found at run time) and a few seeds, two episodes: the oracle's actions, and fixed random tool
calls, odd messages and malformed calls followed by the oracle's actions. The transcript records every observation,
reward, flag, the reward breakdown and `info["messages"]` as JSON. Two child processes with different PYTHONHASHSEED
must write the same bytes, and in one process a fresh env and an env that already played other episodes must agree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from _reliability import ROOT, committed_envs

SEEDS = [0, 1, 7, 123456789]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import gymnasium as gym
    import trace_envs  # noqa: F401
    from trace_envs.generate.policies import random_action

    FIXED = ["Hello! How can I help you today?", "Could you confirm that? Shall I proceed?",
             '{"name": "no_such_tool", "arguments": {}}', '{"name": ', "<tool_call>[1, 2]</tool_call>",
             "caf\\u00e9 \\u2014 \\ud83d\\ude00 \\x00 done."]

    def actions_for(env, seed):
        # two scripts: the oracle alone (it ends the episode); random calls and odd messages, then the oracle
        env.reset(seed=seed)
        oracle = list(env.oracle_actions())
        rng = np.random.default_rng(seed + 99)
        noisy = [random_action(env, rng, t) for t in range(4)] + FIXED
        return [oracle, noisy + oracle]

    def episode(env, seed, actions):
        obs, info = env.reset(seed=seed)
        out = [json.dumps({"reset": obs, "messages": info["messages"], "tools": info["tools"],
                           "hint": info["hint"], "spec_hash": info["spec_hash"]})]
        for a in actions:
            obs, r, term, trunc, info = env.step(a)
            out.append(json.dumps({"action": a, "obs": obs, "reward": r, "terminated": term, "truncated": trunc,
                                   "breakdown": info.get("reward_breakdown"), "success": info.get("success"),
                                   "messages": info["messages"]}))
            if term or trunc:
                break
        return "\\n".join(out)

    def main(out_path, names, seeds):
        lines = []
        for name in names:
            used = gym.make(f"trace/{name}").unwrapped
            for s in (seeds[-1], seeds[0]):  # give `used` some history first
                episode(used, s + 5, actions_for(used, s + 5))
            for seed in seeds:
                fresh = gym.make(f"trace/{name}").unwrapped
                for k, acts in enumerate(actions_for(fresh, seed)):
                    a = episode(fresh, seed, acts)
                    b = episode(used, seed, acts)
                    if a != b:
                        sys.exit(f"{name} seed {seed} script {k}: a fresh env and a used env differ")
                    lines.append(f"=== {name} seed {seed} script {k}\\n{a}")
        with open(out_path, "w", encoding="utf-8") as f:
            f.write("\\n".join(lines) + "\\n")

    main(sys.argv[1], sys.argv[2].split(","), [int(s) for s in sys.argv[3].split(",")])
    """
)


def _run(tmp_path, hashseed: str, names: list[str]) -> bytes:
    out = tmp_path / f"episodes-{hashseed}.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), ",".join(names), ",".join(map(str, SEEDS))],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_bytes()


def _first_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a.decode().splitlines(), b.decode().splitlines())):
        if x != y:
            return f"line {i + 1}:\n  {x[:400]}\n  {y[:400]}"
    return "one output is a prefix of the other"


def test_committed_envs_are_byte_identical_across_processes(tmp_path):
    names = committed_envs()
    if not names:
        pytest.skip("no committed envs")
    a = _run(tmp_path, "0", names)
    b = _run(tmp_path, "4242", names)
    assert a, "no episodes were written"
    assert a == b, _first_difference(a, b)
    # every env, seed and script is in the transcript
    text = a.decode()
    for name in names:
        for seed in SEEDS:
            assert f"=== {name} seed {seed} script 0\n" in text and f"=== {name} seed {seed} script 1\n" in text
