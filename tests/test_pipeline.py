"""`trace-envs run` end to end on the planted data with the tiny model: every stage runs, the final table comes out,
a rerun skips every stage, an adapter trained before an interruption is kept, and a capability the mining did not keep
fails in one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).with_name("trace-envs"))


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
    meta = json.loads((adapter / "trace_adapter.json").read_text())  # the card names hints and routing
    assert meta["routing"] == "lexical" and 0 < meta["hint_fraction"] < 1
    assert "| routing | lexical |" in (adapter / "README.md").read_text()
    trained = json.loads((out / "train" / f"{caps[0]['name']}.json").read_text())  # the table's hints and gradient
    assert (trained["hinted_per_group"], trained["num_generations"]) == (1, 2)
    assert 0.0 <= trained["informative_group_share"] <= 1.0
    report = json.loads((out / "eval" / "report.json").read_text())
    assert set(report[f"trace/{caps[0]['name']}"]) == {"before", "after"}
    chart = (out / "eval" / "before_after.png").read_bytes()
    assert chart.startswith(b"\x89PNG") and len(chart) > 5_000  # success and reward before / after, per capability

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

    # A capability the mining did not keep: one error line naming it and the mined ones, before anything is generated.
    envs_before = sorted(p.name for p in (out / "envs").iterdir())
    unmined = [CLI, "run", "--out", str(out), "--model", "tiny", "--capability", "confirm_before_cancel_order",
               "--capability", "no_such_capability"]
    done = subprocess.run(unmined, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert line and re.search(r"no_such_capability not among the \d+ mined in", line[0]), done.stderr[-2000:]
    assert "confirm_before_cancel_order" in line[0] and "Traceback" not in done.stderr
    assert sorted(p.name for p in (out / "envs").iterdir()) == envs_before  # refused before generating anything


TAU_BENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"


@pytest.mark.skipif(not TAU_BENCH.is_file(), reason="the shared tau-bench runs are not next to this checkout")
def test_run_on_real_tau_bench_logs_with_tiny_finishes(tmp_path):
    """The README's own real data, smallest settings: every stage finishes, including an SFT warm start on a mined env
    whose policy-laden prompt is longer than the old fixed 4,096-token cut (once: num_samples=0). The console gets a
    line per stage and per step, never a raw trainer dict; those go to the metrics file beside each adapter."""
    out = tmp_path / "run"
    config = tmp_path / "small.json"
    config.write_text(json.dumps({"train": {"steps": 1, "num_generations": 2, "max_completion_length": 16,
                                            "sft_episodes": 2},
                                  "eval": {"episodes": 1, "max_new_tokens": 8}}))
    args = [CLI, "run", str(TAU_BENCH), "--out", str(out), "--model", "tiny", "--max-capabilities", "2",
            "--config", str(config)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    console = done.stdout + done.stderr
    assert "{'loss'" not in console and "{'train_runtime'" not in console
    for stage in ("inspect", "mine", "generate", "check", "train", "eval", "route"):
        assert f"{stage}: running" in console
    caps = [c["name"] for c in json.loads((out / "mine" / "capabilities.json").read_text())[:2]]
    lengths = []
    for name in caps:
        assert (f"[grpo] trace/{name}: 1 steps of 2 rollouts, 1 hinted per group, up to 16 tokens each, 16 a turn "
                "(model tiny)") in console
        assert "[grpo] warning: max_completion_length 16 is below the" in console  # no rollout of 16 tokens finishes
        assert (out / "adapters" / name / "adapter_config.json").is_file()
        rows = [json.loads(line) for line in (out / "adapters" / f"{name}.metrics.jsonl").read_text().splitlines()]
        assert {r["phase"] for r in rows} == {"sft", "grpo"}
        assert (out / "adapters" / f"{name}.reward.png").read_bytes()[:4] == b"\x89PNG"
        lengths.append(json.loads((out / "adapters" / f"{name}-sft" / "trace_adapter.json").read_text())["max_length"])
    assert console.count("[grpo] step 1/1: reward") == 2
    assert max(lengths) > 4096, f"no mined env here has a prompt past the old cut any more: {lengths}"


def test_cpu_sizing_changes_only_what_the_user_left_unset():
    from trace_envs.run_config import CPU, CPU_BF16, RunConfig, dotted, for_hardware, load_run_config, option_value
    from trace_envs.training import Hardware

    assert for_hardware(Hardware(gpu=True, cpu_bf16=False)) == []  # a GPU machine keeps the run preset
    assert for_hardware(Hardware(gpu=False, cpu_bf16=True)) == [CPU, CPU_BF16]
    flags = {"train.steps": 5, "model": "tiny"}
    cfg, unchanged = load_run_config(None, flags)
    assert unchanged == []
    sized, changed = load_run_config(None, flags, for_hardware(Hardware(gpu=False, cpu_bf16=False)))
    assert sized.train.steps == 5 and "train.steps" not in changed and sized.model == "tiny"
    for key, value in dotted(CPU.values).items():
        if key != "train.steps":
            assert option_value(sized, key) == value and key in changed
    assert RunConfig().train.num_generations != CPU.values["train"]["num_generations"]  # the sizing is not a no-op


def test_the_route_stage_names_the_routing_method_on_each_adapter_card(tmp_path):
    from adapters_train.models import model_card
    from trace_envs.pipeline import _name_routing

    meta = {"env_id": "trace/x", "capability": "x", "hint_fraction": 0.375, "steps": 2}
    (tmp_path / "trace_adapter.json").write_text(json.dumps(meta))
    (tmp_path / "README.md").write_text(model_card(meta))
    for method in ("model", "lexical"):  # a rerun replaces the row, never adds a second one
        _name_routing(tmp_path, method)
    assert json.loads((tmp_path / "trace_adapter.json").read_text())["routing"] == "lexical"
    card = (tmp_path / "README.md").read_text()
    assert card.count("| routing |") == 1 and "| routing | lexical |" in card and "| hint_fraction | 0.375 |" in card
    _name_routing(tmp_path / "missing", "lexical")  # no adapter there: nothing to name
