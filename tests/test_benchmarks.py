"""Every benchmark module runs at its smoke size (`smoke()`, what `python -m benchmarks --smoke` runs), so that a
benchmark that crashes fails here and not only in the next `make bench`. Figures stay out of tests (these machines are
noisy): each must run and return its rows, whatever they say of the floors."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
NAMES = sorted(m.name for m in pkgutil.iter_modules([str(BENCHMARKS)]) if m.name.startswith("bench_"))


def test_every_benchmark_module_is_found():
    assert len(NAMES) >= 10 and "bench_env" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_benchmark_runs_at_smoke_size(name):
    module = importlib.import_module(f"benchmarks.{name}")
    lines = module.smoke()
    assert lines and all(isinstance(line, str) and line.strip() for line in lines), lines
    assert not [line for line in lines if "ERROR" in line], lines


def test_the_env_benchmark_measures_every_registered_env_even_one_whose_agent_has_no_tools():
    """The telecom env's oracle makes no tool call (the user has the tools): the benchmark steps its first message."""
    from benchmarks.bench_env import step_and_reset
    from trace_envs.registry import registered

    ids = sorted(registered())
    assert "trace/telecom_user_fixes_airplane_or_roaming" in ids
    for env_id in ids:
        step, reset = step_and_reset(env_id, steps=2, resets=2, json_repeat=5)
        assert step.startswith(f"{env_id}: json.loads") and " | step (" in step
        assert reset.startswith(f"{env_id}: reset ")
    assert "message, the oracle makes no tool call" in step_and_reset(
        "trace/telecom_user_fixes_airplane_or_roaming", steps=2, resets=2, json_repeat=5)[0]


def test_smoke_runs_report_errors_not_figures(capsys, monkeypatch):
    """`python -m benchmarks --smoke` fails on a benchmark that raises, not on a smoke run's FAIL figures."""
    from benchmarks import __main__ as main

    monkeypatch.setattr("benchmarks.bench_loaders.smoke", lambda: ["ratio 9.9x (floor <= 4.0x) FAIL"])
    assert main.main(["--smoke", "loaders"]) == 0
    monkeypatch.setattr("benchmarks.bench_loaders.smoke", lambda: 1 / 0)
    assert main.main(["--smoke", "loaders"]) == 1
    assert "ERROR ZeroDivisionError" in capsys.readouterr().out


def test_several_benchmarks_run_each_in_its_own_process(capfd):
    """`make bench` runs every module in a fresh process (one module's threads and heap slow the next one's figures):
    each prints its own section, and the exit status is the worst of theirs."""
    from benchmarks import __main__ as main

    assert main.main(["--smoke", "loaders", "inspect_large"]) == 0
    out = capfd.readouterr().out
    assert out.index("== bench_loaders") < out.index("== bench_inspect_large") and "PASS" in out
    assert main.main(["--smoke", "loaders", "no_such"]) == 2
