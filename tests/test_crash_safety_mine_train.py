"""Crash safety of `mine` and `train`: SIGKILL at random moments leaves the old complete output or the new complete
output (never a half-written spec set or adapter), and a rerun completes.

`mine` runs again and again into one folder with alternating thresholds, so every run really replaces the set; after
each kill the folder holds exactly the four outputs, all parseable and from the same run. `train` (the tiny model, one
GRPO step) replaces an existing adapter; after each kill the adapter folder is the old one or the new one, complete and
loadable with PEFT.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trace_envs.datasets.planted import generate_planted, write_jsonl
from trace_envs.mining.report import OUTPUT_FILES

MINE_LOOP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from trace_envs.mining.pipeline import MineOptions, mine
    from trace_envs.mining.report import write_outputs
    from trace_envs.trajectories.loaders import load_runs

    runs = load_runs([sys.argv[1]]).runs
    out = Path(sys.argv[2])
    print("ready", flush=True)
    i = 0
    while True:
        result = mine(runs, options=MineOptions(rho=(0.10, 0.12)[i % 2], n=4, k=3))
        write_outputs(result, out)
        i += 1
    """
)


def _kill_after(cmd: list[str], delay: float) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def _assert_mine_output_complete(out: Path) -> None:
    visible = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert visible == sorted(OUTPUT_FILES), f"incomplete or mixed mining output: {visible}"
    caps = json.loads((out / "capabilities.json").read_text())
    doc = json.loads((out / "candidates.json").read_text())
    rho = doc["thresholds"]["rho"]
    assert all(f"rho={rho}" in c["evidence"]["source"] for c in caps), "capabilities and candidates from different runs"
    assert f"Cov >= {rho}" in (out / "report.md").read_text()
    assert (out / "report.png").read_bytes().startswith(b"\x89PNG")


def test_mine_killed_at_random_moments_leaves_a_complete_set(tmp_path):
    data = write_jsonl(generate_planted(600, seed=4), tmp_path / "runs.jsonl")
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-c", MINE_LOOP.replace("while True", "while i < 1"), str(data), str(out)],
                   check=True, capture_output=True)
    _assert_mine_output_complete(out)
    rng = random.Random(0)
    for _ in range(6):
        _kill_after([sys.executable, "-c", MINE_LOOP, str(data), str(out)], rng.uniform(0.2, 3.0))
        _assert_mine_output_complete(out)
    # a rerun of the real command completes
    trace_envs = Path(sys.executable).with_name("trace-envs")
    subprocess.run([str(trace_envs), "mine", str(data), "-o", str(out), "-q"], check=True, capture_output=True)
    _assert_mine_output_complete(out)


TRAIN = textwrap.dedent(
    """
    import os, sys
    os.environ["HF_HUB_OFFLINE"] = "1"
    import trace_envs
    from trace_envs.training import TrainConfig
    from adapters_train.grpo import train_grpo
    print("ready", flush=True)
    cfg = TrainConfig(env_id=sys.argv[1], model="tiny", out=sys.argv[2], steps=1, num_generations=2,
                      max_completion_length=16, learning_rate=float(sys.argv[3]))
    train_grpo(cfg)
    """
)
ENV_ID = "trace/airline_check_cabin_before_cancel"


def _adapter_state(folder: Path) -> str | None:
    """The learning rate recorded by the complete adapter in `folder` (None when absent); fails when incomplete."""
    if not folder.exists():
        return None
    names = {p.name for p in folder.iterdir()}
    needed = {"adapter_config.json", "adapter_model.safetensors", "trace_adapter.json", "README.md"}
    assert needed <= names, f"half-written adapter: {sorted(names)}"
    from peft import PeftModel

    from adapters_train.models import build_tiny

    PeftModel.from_pretrained(build_tiny().model, str(folder))
    return str(json.loads((folder / "trace_adapter.json").read_text())["learning_rate"])


@pytest.mark.slow
def test_train_killed_at_random_moments_leaves_old_or_new_adapter(tmp_path):
    out = tmp_path / "adapters"
    target = out / ENV_ID.split("/")[1]
    subprocess.run([sys.executable, "-c", TRAIN, ENV_ID, str(out), "1e-5"], check=True, capture_output=True)
    assert _adapter_state(target) == "1e-05"
    rng = random.Random(1)
    seen = set()
    for _ in range(3):
        _kill_after([sys.executable, "-c", TRAIN, ENV_ID, str(out), "2e-5"], rng.uniform(2.0, 14.0))
        seen.add(_adapter_state(target))
        visible = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
        # besides the adapter only the run's metrics log and its reward curve, each whole
        assert set(visible) <= {target.name, f"{target.name}.metrics.jsonl", f"{target.name}.reward.png"}, visible
        curve = out / f"{target.name}.reward.png"
        assert not curve.exists() or curve.read_bytes().endswith(b"IEND\xaeB`\x82")
    assert seen <= {"1e-05", "2e-05"}
    subprocess.run([sys.executable, "-c", TRAIN, ENV_ID, str(out), "2e-5"], check=True, capture_output=True)
    assert _adapter_state(target) == "2e-05"
