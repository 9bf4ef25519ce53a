"""`trace-envs train` under `torchrun --nproc_per_node 2` is one data-parallel job (gloo on this CPU): the first step's
token count is twice one process's, each rank rolls out its own GRPO groups (distinct seeds), only rank 0 reports and
writes the adapter, and both ranks end with identical LoRA weights (the documented TRACE_ENVS_DEBUG_DIR dump).
Tiny random model, warm start + 2 GRPO steps: the warm start's SFT step carries a real gradient that DDP averages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
gym = pytest.importorskip("gymnasium")

import trace_envs  # noqa: E402,F401
from adapters_train.grpo import train_grpo  # noqa: E402
from trace_envs.training import TrainConfig  # noqa: E402

ENVS = sorted(k for k in gym.registry if k.startswith("trace/"))
pytestmark = pytest.mark.skipif(not ENVS, reason="no generated env registered")

TRAIN = ["train", "--model", "tiny", "--steps", "2", "-g", "2", "--max-completion-length", "24", "--warm-start",
         "--json"]


def _run(cmd: list[str], tmp: Path, **env: str) -> tuple[dict, str]:
    """Run a training command; return rank 0's JSON summary (the only one printed) and stderr."""
    config = tmp / "small.yaml"
    config.write_text("sft_episodes: 4\nsft_epochs: 1\n")
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", **env}
    proc = subprocess.run([*cmd, "--config", str(config)], capture_output=True, text=True, env=full_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"env_id"')]
    assert len(summaries) == 1, proc.stdout[-2000:]  # one job, one report: the other rank prints nothing
    return summaries[0], proc.stderr


def _torchrun() -> list[str]:
    exe = Path(sys.executable).parent / "torchrun"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_two_ranks_train_one_model(tmp_path: Path) -> None:
    env_id = ENVS[0]
    name = env_id.split("/")[-1]
    # The one-process baseline, in this process (same options as the CLI below).
    one = train_grpo(TrainConfig(env_id=env_id, model="tiny", out=str(tmp_path / "one"), steps=2, num_generations=2,
                                 max_completion_length=24, warm_start=True, sft_episodes=4, sft_epochs=1))
    dump = tmp_path / "debug"
    two, err = _run([*_torchrun(), "--standalone", "--nproc_per_node", "2", "-m", "trace_envs", *TRAIN[:1], env_id,
                     *TRAIN[1:], "--out", str(tmp_path / "two")], tmp_path, TRACE_ENVS_DEBUG_DIR=str(dump))
    assert "parallel_mode != ParallelMode.DISTRIBUTED" not in err
    # The global batch spans the ranks: two groups per step instead of one (prompt lengths differ a little by seed).
    ratio = two["num_tokens"][0] / one.num_tokens[0]
    assert 1.9 <= ratio <= 2.1, (one.num_tokens, two["num_tokens"])
    assert err.count("[grpo] step 1/") == 1  # rank 0 logs the step summaries, once
    ranks = [json.loads((dump / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    # Every rank rolls out whole groups (one seed per group) and no group is drawn twice across ranks and steps.
    for step in range(2):
        per_rank = [set(r["step_seeds"][step]) for r in ranks]
        assert all(len(s) == 1 for s in per_rank), per_rank
        assert per_rank[0] != per_rank[1]
    # The hint reaches the same share of every group on each rank (the default fraction of a group of 2 is 1).
    assert all(flags == [True, False] for r in ranks for flags in r["step_hints"]), [r["step_hints"] for r in ranks]
    assert [len(r["step_hints"]) for r in ranks] == [2, 2]
    seen = [s for r in ranks for step in r["step_seeds"] for s in set(step)]
    assert len(seen) == len(set(seen)) == 4
    # One model: identical LoRA tensors on both ranks, written once by rank 0.
    assert ranks[0]["lora_sha256"] == ranks[1]["lora_sha256"] and ranks[0]["lora_tensors"] > 0
    assert [r["saved_adapter"] for r in ranks] == [True, False]
    out = tmp_path / "two"
    # the adapter, its warm start and rank 0's metrics file and reward curve; no temp folder
    assert sorted(p.name for p in out.iterdir()) == [name, f"{name}-sft", f"{name}.metrics.jsonl", f"{name}.reward.png"]
    logged = [json.loads(line) for line in (out / f"{name}.metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged if r["phase"] == "grpo" and "reward" in r] == [1, 2]  # written once, by rank 0
    meta = json.loads((out / name / "trace_adapter.json").read_text())
    assert meta["world_size"] == 2 and meta["steps"] == 2
    from adapters_train.distributed import lora_checksum
    from adapters_train.models import build_tiny
    from peft import PeftModel

    saved = PeftModel.from_pretrained(build_tiny().model, str(out / name))
    assert lora_checksum(saved)[0] == ranks[0]["lora_sha256"]


def test_module_entry_points_run_the_cli() -> None:
    for module in ("trace_envs", "trace_envs.cli"):
        proc = subprocess.run([sys.executable, "-m", module, "train", "--help"], capture_output=True, text=True)
        assert proc.returncode == 0 and "torchrun" in proc.stdout, proc.stderr
