"""`RunConfig` composes the stages' option models instead of copying their fields: each knob has one default and one
range check, in its own model; `run`'s different starting values are a named preset (as are the CPU sizing and the
demo); every field is typed and described; a bad value is a pydantic error naming the field; the older flat layout
is refused with where each option went; `trace-envs run --help` lists every option."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from trace_envs.evaluation import EvalOptions, PolicyOptions
from trace_envs.mining.options import MineOptions, SelectOptions
from trace_envs.run_config import (
    CPU,
    CPU_BF16,
    DEMO,
    DEMO_CAPABILITIES,
    DEMO_TINY,
    PRESETS,
    RUN,
    SECTIONS,
    Preset,
    RunConfig,
    demo_config,
    dotted,
    load_run_config,
    option_value,
)
from trace_envs.training import Hardware, TrainConfig, TrainOptions, load_config

MODELS = [RunConfig, TrainOptions, TrainConfig, MineOptions, SelectOptions, EvalOptions, PolicyOptions]


def _cli(*args: str):
    from trace_envs.cli import _load_commands, app

    _load_commands()
    return CliRunner().invoke(app, list(args))


def every_option() -> list[str]:
    """Every option of a RunConfig by dotted name."""
    return [f"{key}.{name}" if key in SECTIONS else key
            for key in RunConfig.model_fields for name in (SECTIONS[key].model_fields if key in SECTIONS else [""])]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_is_typed_and_described(model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        assert field.annotation is not None, f"{model.__name__}.{name} has no type"
        assert field.description and field.description.strip(), f"{model.__name__}.{name} has no description"


def test_run_config_holds_the_stage_models_and_copies_none_of_their_fields() -> None:
    assert {key: RunConfig.model_fields[key].annotation for key in SECTIONS} == SECTIONS
    assert SECTIONS == {"mine": MineOptions, "train": TrainOptions, "eval": EvalOptions}
    own = set(RunConfig.model_fields) - set(SECTIONS)
    for section, model in SECTIONS.items():
        assert not own & set(model.model_fields), f"RunConfig repeats {section} options {own & set(model.model_fields)}"
    assert not {"rho", "delta", "k", "n", "steps", "learning_rate", "eval_episodes", "train_config"} & own


def test_run_starts_from_the_run_preset_else_the_models_defaults() -> None:
    """One default per knob: a RunConfig's value is the run preset's where it has one, else the model's own."""
    start = RunConfig()
    preset = dotted(RUN.values)
    for name in every_option():
        section, _, field = name.partition(".")
        if not field:
            continue
        own = SECTIONS[section].model_fields[field].get_default(call_default_factory=True)
        assert option_value(start, name) == preset.get(name, own), name
        if name in preset:
            assert preset[name] != own, f"the run preset repeats {name}'s own default"


def test_the_defaults_users_see_stay_what_they_were() -> None:
    """`run` and `train` keep their own starting values: the paper's recipe for `train`, a short run for `run`."""
    run = RunConfig()
    assert (run.train.steps, run.train.num_generations, run.train.learning_rate, run.train.max_completion_length,
            run.train.warm_start, run.train.sft_episodes, run.train.sft_epochs, run.train.sft_learning_rate,
            run.train.sft_batch_size, run.train.lora_dropout, run.train.bf16) == (
        8, 4, 5e-5, None, True, 16, 1.0, 2e-4, 4, 0.05, False)
    assert (run.eval.episodes, run.eval.max_new_tokens, run.eval.max_turns) == (6, 128, None)
    assert (run.mine.rho, run.mine.delta, run.mine.k, run.mine.n) == (0.10, 0.20, 8, 10)
    assert (run.model, run.out, run.inputs, run.route_tasks, run.max_capabilities) == ("auto", "runs/trace",
                                                                                        ["planted"], 300, None)
    train = TrainConfig()
    assert (train.steps, train.num_generations, train.learning_rate, train.max_completion_length, train.warm_start,
            train.sft_episodes, train.sft_epochs, train.lora_r, train.model, train.out) == (
        160, 8, 1e-5, None, False, 64, 2.0, 16, "smollm2", "adapters")
    assert (EvalOptions().episodes, EvalOptions().temperature, MineOptions().rho) == (50, 0.0, 0.10)


def test_the_demo_is_the_cpu_preset_plus_its_own_choices() -> None:
    smol = demo_config("runs/demo", "smollm2", Hardware(gpu=False, cpu_bf16=True))
    assert (smol.capabilities, smol.max_capabilities, smol.out, smol.model) == (DEMO_CAPABILITIES, None, "runs/demo",
                                                                                "smollm2")
    t, e = smol.train, smol.eval
    assert (t.steps, t.num_generations, t.max_completion_length, t.sft_episodes, t.sft_batch_size,
            t.sft_learning_rate, t.lora_dropout, t.bf16, t.warm_start, t.learning_rate) == (
        1, 2, None, 20, 1, 1e-3, 0.0, True, True, 5e-5)
    assert (e.episodes, e.max_new_tokens, e.max_turns) == (10, 96, 6)
    assert demo_config("runs/demo", "smollm2", Hardware(gpu=False, cpu_bf16=False)).train.bf16 is False
    tiny = demo_config("runs/demo", "tiny")
    assert (tiny.max_capabilities, tiny.train.steps, tiny.eval.episodes, tiny.capabilities) == (3, 4, 6, None)
    assert {k: v for k, v in dotted(DEMO.values).items() if k in dotted(CPU.values)} != dotted(CPU.values)  # own


@pytest.mark.parametrize("preset", PRESETS.values(), ids=lambda p: p.name)
def test_every_preset_applies_and_its_values_pass_the_range_checks(preset: Preset) -> None:
    cfg, _ = load_run_config(None, {}, [preset])
    for name, value in dotted(preset.values).items():
        assert option_value(cfg, name) == value
    assert preset.about


def test_a_preset_naming_no_option_is_refused() -> None:
    with pytest.raises(ValidationError, match="preset typo: no option train.stpes"):
        Preset(name="typo", about="x", values={"train": {"stpes": 1}})
    with pytest.raises(ValidationError, match="preset typo: no option eval_episodes"):
        Preset(name="typo", about="x", values={"eval_episodes": 1})


@pytest.mark.parametrize("data, field", [
    ({"train": {"steps": 0}}, "train.steps"),
    ({"train": {"num_generations": 1}}, "train.num_generations"),
    ({"train": {"lora_dropout": 1.0}}, "train.lora_dropout"),
    ({"eval": {"episodes": 0}}, "eval.episodes"),
    ({"eval": {"temperature": -1}}, "eval.temperature"),
    ({"mine": {"rho": 1.5}}, "mine.rho"),
    ({"mine": {"delta": -2}}, "mine.delta"),
    ({"mine": {"n": 0}}, "mine.n"),
    ({"planted_runs": 10}, "planted_runs"),
    ({"max_capabilities": 0}, "max_capabilities"),
    ({"train": {"no_such_knob": 1}}, "train.no_such_knob"),
])
def test_a_bad_value_is_a_pydantic_error_naming_the_field(data, field) -> None:
    with pytest.raises(ValidationError) as err:
        RunConfig.model_validate(data)
    assert field in {".".join(str(p) for p in e["loc"]) for e in err.value.errors()}


def test_k_of_n_is_checked_once_in_the_mining_options() -> None:
    with pytest.raises(ValidationError, match=r"k \(11\) must be at most n \(10\)"):
        RunConfig.model_validate({"mine": {"k": 11}})
    with pytest.raises(ValidationError, match=r"k \(9\) must be at most n \(4\)"):
        MineOptions(k=9, n=4)


def test_a_train_config_value_out_of_range_names_the_field(tmp_path) -> None:
    with pytest.raises(ValidationError, match="steps"):
        load_config(None, steps=0)
    (tmp_path / "t.json").write_text(json.dumps({"lora_r": 0}))
    with pytest.raises(ValidationError, match="lora_r"):
        load_config(tmp_path / "t.json")


def test_flags_map_onto_the_sections_and_win_over_the_file(tmp_path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("model: tiny\ntrain:\n  steps: 3\n  lora_r: 8\n  grpo: {beta: 0.04}\neval:\n  episodes: 2\n"
                    "mine:\n  rho: 0.2\n")
    cfg, _ = load_run_config(path, {"train.steps": 5, "eval.episodes": None, "capabilities": ["a"]})
    assert (cfg.model, cfg.train.steps, cfg.train.lora_r, cfg.train.grpo, cfg.eval.episodes, cfg.mine.rho) == (
        "tiny", 5, 8, {"beta": 0.04}, 2, 0.2)
    assert cfg.capabilities == ["a"] and cfg.train.warm_start is True  # the run preset under what the file set


def test_the_flat_layout_is_refused_with_where_each_option_went(tmp_path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"steps": 1, "eval_episodes": 1, "rho": 0.2, "train_config": "t.yaml",
                                "base_url": "http://x"}))
    with pytest.raises(ValidationError) as err:
        load_run_config(path)
    text = str(err.value)
    for hint in ("steps is now train.steps", "eval_episodes is now eval.episodes", "rho is now mine.rho",
                 "train_config is gone: put that file's options under train:", "base_url is now llm_base_url",
                 "sections mine, train, eval"):
        assert hint in text
    res = _cli("run", "--config", str(path), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2 and "steps is now train.steps" in res.stderr and len(res.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_run_with_a_flag_out_of_range_is_one_error_line_naming_the_field(tmp_path) -> None:
    res = _cli("run", "--steps", "0", "--out", str(tmp_path / "out"))
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == "error: options: train.steps: Input should be greater than or equal to 1"


def test_run_help_lists_every_option_with_its_starting_value() -> None:
    res = _cli("run", "--help")
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    for name in every_option():
        assert f" {name}: " in text, name
    assert "train.steps: 8 (run preset; TrainOptions default 160)" in text
    assert "eval.episodes: 6 (run preset; EvalOptions default 50)" in text
    assert "mine.rho: 0.1 " in text


def test_cpu_bf16_is_its_own_preset() -> None:
    assert dotted(CPU_BF16.values) == {"train.bf16": True} and "train.bf16" not in dotted(CPU.values)
    assert DEMO_TINY.values == {"max_capabilities": 3, "train": {"steps": 4}}
