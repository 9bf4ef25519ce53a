"""`trace-envs run` end to end on the planted data with the tiny model: every stage runs, the final table comes out,
a rerun skips every stage, and an adapter trained before an interruption is kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).with_name("trace-envs"))


@pytest.mark.slow
def test_run_end_to_end_then_resume(tmp_path):
    out = tmp_path / "run"
    args = [CLI, "run", "--out", str(out), "--model", "tiny", "--steps", "1", "--max-capabilities", "1",
            "--eval-episodes", "2"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    text = first.stdout
    assert "capabilities (trained with tiny)" in text and "router (lexical): accuracy" in text
    for stage in ("inspect", "mine", "generate", "check", "train", "eval", "route"):
        assert json.loads((out / stage / ".done.json").read_text())["fingerprint"]
    caps = json.loads((out / "mine" / "capabilities.json").read_text())
    adapter = out / "adapters" / caps[0]["name"]
    assert (adapter / "adapter_config.json").is_file() and (out / "adapters" / "router.json").is_file()
    report = json.loads((out / "eval" / "report.json").read_text())
    assert set(report[f"trace/{caps[0]['name']}"]) == {"before", "after"}

    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("skipped (up to date)") == 7

    # An interrupted train stage: its marker is gone, the adapter it finished is kept, not retrained.
    (out / "train" / ".done.json").unlink()
    mtime = (adapter / "adapter_model.safetensors").stat().st_mtime
    resumed = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "1 kept from an interrupted run" in resumed.stdout
    assert (adapter / "adapter_model.safetensors").stat().st_mtime == mtime
