"""The one seam between the library and training (`trace_envs.training`): the implementation is found through the
entry point group, a missing one is one error naming the extra to install, several are told apart by
TRACE_ENVS_TRAINING, and scripted evaluation needs none."""

from __future__ import annotations

import importlib.metadata

import pytest
from typer.testing import CliRunner

from trace_envs.training import ENTRY_POINT_GROUP, Training, TrainingUnavailable, seam, training

ENV = "trace/airline_check_cabin_before_cancel"


def _cli(*args: str):
    from trace_envs.cli import _load_commands, app

    _load_commands()
    return CliRunner().invoke(app, list(args))


def _entry(name: str, value: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)


@pytest.fixture
def no_training(monkeypatch):
    monkeypatch.setattr(seam, "_entry_points", lambda: [])


def test_the_installed_implementation_is_found_through_the_entry_point() -> None:
    entries = [ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]
    assert len(entries) == 1, "pyproject.toml declares one (reinstall the package after changing it)"
    impl = training()
    assert isinstance(impl, Training) and impl is entries[0].load()


def test_no_implementation_is_one_error_naming_the_extra(no_training) -> None:
    with pytest.raises(TrainingUnavailable, match=r"no training package is installed .*pip install 'trace-envs\[train\]'"):
        training()


@pytest.mark.parametrize("args", [
    ["train", ENV, "--model", "tiny", "--steps", "1"],
    ["sft", ENV, "--model", "tiny"],
    ["eval", ENV, "--policy", "hf:tiny", "--episodes", "1"],
    ["calibrate", ENV, "--policy", "hf:tiny", "--groups", "1", "--k", "2"],
    ["run", "--model", "tiny"],
    ["demo", "--model", "tiny"],
], ids=["train", "sft", "eval", "calibrate", "run", "demo"])
def test_every_command_that_trains_says_what_to_install(no_training, args, tmp_path) -> None:
    writes = args[0] in ("train", "sft", "run", "demo")
    res = _cli(*args, *(["--out", str(tmp_path / "a")] if writes else []))
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no training package is installed"), res.stderr
    assert "pip install 'trace-envs[train]'" in lines[0]
    assert not (tmp_path / "a").exists()


def test_scripted_evaluation_needs_no_training_package(no_training) -> None:
    res = _cli("eval", ENV, "--policy", "scripted:oracle", "--episodes", "2", "--json")
    assert res.exit_code == 0, res.output


def test_several_implementations_are_chosen_by_name(monkeypatch) -> None:
    ours = next(iter(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)))
    monkeypatch.setattr(seam, "_entry_points", lambda: [ours, _entry("other", "json:dumps")])
    monkeypatch.delenv(seam.CHOICE_VARIABLE, raising=False)
    with pytest.raises(TrainingUnavailable, match="several training implementations are installed .*TRACE_ENVS_TRAINING"):
        training()
    monkeypatch.setenv(seam.CHOICE_VARIABLE, ours.name)
    assert training() is ours.load()
    monkeypatch.setenv(seam.CHOICE_VARIABLE, "nope")
    with pytest.raises(TrainingUnavailable, match="TRACE_ENVS_TRAINING=nope: no such training implementation"):
        training()
    monkeypatch.setenv(seam.CHOICE_VARIABLE, "other")
    with pytest.raises(TrainingUnavailable, match=r"other \(json:dumps\) does not provide"):
        training()
