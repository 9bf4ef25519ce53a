"""A mistyped model name fails at once: one `error:` line naming the valid choices, exit code 2, no hub call.

Only a name of the form `org/name` that is no local path reaches the hub, and one that the hub cannot supply (offline
here) is one error line too, not the hub client's minute of retries and traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("trl")

from adapters_train.models import ModelNameError, check_model_name, load_policy_model, resolve_model  # noqa: E402

ENV = "trace/airline_check_cabin_before_cancel"
VALID = "give tiny, smollm2, a local path (a model folder or a .gguf file) or a hub id org/name"


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    from trace_envs.cli import _load_commands, app

    _load_commands()
    return app


@pytest.fixture(autouse=True)
def no_hub(monkeypatch):
    """Any request to the hub fails the test: a typo must never get that far."""
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise AssertionError(f"the hub was asked: {args} {kwargs}")

    monkeypatch.setattr(huggingface_hub, "model_info", refuse)


def one_error_line(res) -> str:
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["eval", ENV, "--policy", "hf:smolm2", "--episodes", "1"],
        ["calibrate", ENV, "--policy", "hf:smolm2", "--groups", "1", "--k", "2"],
        ["train", ENV, "--model", "smolm2", "--steps", "1"],
        ["sft", ENV, "--model", "smolm2", "--episodes", "1"],
        ["run", "--model", "smolm2"],
        ["demo", "--model", "smolm2"],
    ],
    ids=["eval", "calibrate", "train", "sft", "run", "demo"],
)
def test_typo_in_a_model_name_is_one_error_line(app, args, tmp_path):
    writes = args[0] in ("train", "sft", "run", "demo")  # each would create its output folder
    res = CliRunner().invoke(app, [*args, *(["--out", str(tmp_path / "a")] if writes else [])])
    line = one_error_line(res)
    assert line == f"error: unknown model 'smolm2' (not a known model name): did you mean smollm2? {VALID}"
    assert not (tmp_path / "a").exists()


def test_missing_adapter_folder_is_one_error_line(app, tmp_path):
    res = CliRunner().invoke(app, ["eval", ENV, "--policy", f"hf:tiny+{tmp_path / 'nope'}", "--episodes", "1"])
    assert one_error_line(res) == (f"error: adapter '{tmp_path / 'nope'}': no such folder; give a folder that "
                                   "`trace-envs train` or `sft` wrote (BASE+ADAPTER_DIR)")


def test_hub_id_offline_is_one_error_line(app, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = CliRunner().invoke(app, ["eval", ENV, "--policy", "hf:no-such-org/no-such-model", "--episodes", "1"])
    assert one_error_line(res) == ("error: model 'no-such-org/no-such-model' is not in the local Hugging Face cache "
                                   "and HF_HUB_OFFLINE is set; give tiny, smollm2 or a local model folder")


def test_hub_unreachable_is_one_error_line(monkeypatch):
    """The hub is asked once (it is a hub id), and its failure is one sentence."""
    import huggingface_hub

    asked = []

    def unreachable(repo_id, timeout=None):
        asked.append((repo_id, timeout))
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    with pytest.raises(ModelNameError) as err:
        resolve_model("no-such-org/no-such-model")
    assert asked == [("no-such-org/no-such-model", 10)]
    assert str(err.value) == (
        "model 'no-such-org/no-such-model': not in the local cache, and the Hugging Face hub cannot supply it "
        "(ConnectionError: [Errno -2] Name or service not known); check the id and the network, or give tiny, "
        "smollm2 or a local model folder"
    )


def test_check_model_name_forms(tmp_path):
    assert check_model_name("tiny") == "tiny" and check_model_name("smollm2") == "smollm2"
    assert check_model_name("HuggingFaceTB/SmolLM2-135M-Instruct") == "hub"
    folder = tmp_path / "model"
    folder.mkdir()
    with pytest.raises(ModelNameError, match=r"model folder '.*model' holds no config.json"):
        check_model_name(str(folder))
    (folder / "config.json").write_text("{}")
    assert check_model_name(str(folder)) == "path"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert check_model_name(str(gguf)) == "path"
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelNameError, match="is a file but not a .gguf checkpoint"):
        check_model_name(str(tmp_path / "notes.txt"))
    with pytest.raises(ModelNameError, match=r"'\./nope' \(no such file or folder\): give tiny"):
        check_model_name("./nope")
    with pytest.raises(ModelNameError, match=r"did you mean tiny\?"):
        check_model_name("tiyn")
    with pytest.raises(ModelNameError, match="no model given"):
        check_model_name(" ")
    with pytest.raises(ModelNameError, match="did you mean smollm2"):
        load_policy_model("smolm2+adapters/x")


def test_a_local_folder_wins_over_the_hub_form(tmp_path, monkeypatch):
    """`org/name` that exists on disk is a path: loaded from there, the hub never asked."""
    loaded = resolve_model("tiny")
    target = tmp_path / "org" / "name"
    loaded.model.save_pretrained(target)
    loaded.tokenizer.save_pretrained(target)
    monkeypatch.chdir(tmp_path)
    assert check_model_name("org/name") == "path"
    again = resolve_model("org/name")
    assert again.name == "org/name" and again.model.config.hidden_size == loaded.model.config.hidden_size
    assert Path("org/name/config.json").is_file()


def test_missing_routed_adapters_folder_is_one_error_line(app, tmp_path):
    res = CliRunner().invoke(app, ["eval", ENV, "--policy", f"routed:tiny+{tmp_path / 'nope'}", "--episodes", "1"])
    assert one_error_line(res) == (f"error: routed policy: {tmp_path / 'nope'}: no router.json and no adapters "
                                   "(*/trace_adapter.json) found; give a folder that `trace-envs train` wrote")
