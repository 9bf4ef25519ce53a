"""`RunConfig`: everything `trace-envs run` does, as data, composed of the option models of the stages it drives
(`MineOptions`, `TrainOptions`, `EvalOptions`), and the named presets that size a run.

Each option has one default and one range check, in its own model. A preset is a named set of values layered under
what the user sets: `RUN` is what `run` changes from the models' defaults (a short warm-started run of a small model,
where `trace-envs train` keeps the paper's recipe), and `RunConfig` always starts from it; `CPU` sizes a run for a
machine without a GPU (only options the user left unset); `DEMO` and `DEMO_TINY` are `trace-envs demo`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trace_envs.config_files import read_mapping
from trace_envs.evaluation.options import EvalOptions
from trace_envs.mining.options import MineOptions
from trace_envs.training import Hardware, TrainingUnavailable, TrainOptions, training

PLANTED = "planted"
SECTIONS: dict[str, type[BaseModel]] = {"mine": MineOptions, "train": TrainOptions, "eval": EvalOptions}


def layer(*mappings: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    """The mappings merged in order, a later value over an earlier one, nested mappings merged key by key (an option
    model counts with the fields that were set on it). The inputs are not changed."""
    out: dict[str, Any] = {}
    for mapping in mappings:
        if isinstance(mapping, BaseModel):
            mapping = mapping.model_dump(exclude_unset=True)
        for key, value in mapping.items():
            if isinstance(value, BaseModel):
                value = value.model_dump(exclude_unset=True)
            if isinstance(value, Mapping) and isinstance(out.get(key), dict):
                out[key] = layer(out[key], value)
            elif isinstance(value, Mapping):
                out[key] = layer(value)
            else:
                out[key] = value
    return out


def dotted(values: Mapping[str, Any]) -> dict[str, Any]:
    """A preset's values by dotted option name (`train.steps`); the pass-through mappings stay whole."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in SECTIONS:
            out.update({f"{key}.{name}": v for name, v in value.items()})
        else:
            out[key] = value
    return out


def undotted(values: Mapping[str, Any]) -> dict[str, Any]:
    """`{"train.steps": 5}` as `{"train": {"steps": 5}}`."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        section, sep, name = key.partition(".")
        if sep:
            out.setdefault(section, {})[name] = value
        else:
            out[key] = value
    return out


def option_value(config: BaseModel, name: str) -> Any:
    """The value of a dotted option name on a config."""
    for part in name.split("."):
        config = getattr(config, part)
    return config


class Preset(BaseModel):
    """A named set of option values, in `RunConfig`'s layout, layered under what the user sets."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="What the preset is called in messages.")
    about: str = Field(description="What it is for.")
    values: dict[str, Any] = Field(description="Option values in RunConfig's layout (sections as mappings).")

    @model_validator(mode="after")
    def _known_options(self) -> "Preset":
        # The values themselves are checked by the option models when the preset is applied (a test applies each).
        for key, value in self.values.items():
            if key not in RunConfig.model_fields:
                raise ValueError(f"preset {self.name}: no option {key}")
            if key in SECTIONS:
                unknown = sorted(set(value) - set(SECTIONS[key].model_fields))
                if unknown:
                    raise ValueError(f"preset {self.name}: no option {', '.join(f'{key}.{u}' for u in unknown)}")
        return self

    def extend(self, name: str, about: str, values: Mapping[str, Any]) -> "Preset":
        """This preset with `values` over it, under a name of its own."""
        return Preset(name=name, about=about, values=layer(self.values, values))


def _moved(key: str) -> str | None:
    """Where an option of the flat layout (before the stages' options were sections) lives now, if anywhere."""
    if key == "train_config":
        return ("train_config is gone: put that file's options under train: (its grpo:, lora: and sft: sections "
                "take TRL's and PEFT's own options)")
    if key == "base_url":
        return "base_url is now llm_base_url (the LLM proposer's server; eval.base_url is an openai: policy's)"
    for section, model in SECTIONS.items():
        name = key.removeprefix(f"{section}_")
        if name in model.model_fields:
            return f"{key} is now {section}.{name}"
    return None


class RunConfig(BaseModel):
    """Everything `trace-envs run` does, as data: the flags, or a YAML/JSON `--config` file of this layout (every key
    optional; a key left out takes the `run` preset's value, else its model's default)::

        inputs: [runs/airline.json]    # run files, folders or globs; [planted] for the embedded data set
        out: runs/trace
        model: auto                    # auto, tiny, smollm2, a path or a hub id
        max_capabilities: 2
        capabilities: [confirm_before_cancel_order]
        llm: openai:gpt-4o-mini        # the LLM proposer; offline when unset
        mine:                          # MineOptions (trace_envs.mining.options)
          rho: 0.1
          k: 8
        train:                         # TrainOptions (trace_envs.training): the run preset's, unless set here
          steps: 8
          warm_start: true
          grpo: {beta: 0.04}           # TRL's GRPOConfig; lora: PEFT's LoraConfig; sft: TRL's SFTConfig
        eval:                          # EvalOptions (trace_envs.evaluation.options)
          episodes: 6
          max_turns: 8

    `trace-envs run --help` lists every option with its default. A file of the older flat layout (`steps: 8`,
    `eval_episodes: 6`) is refused with the section each option moved to.
    """

    model_config = ConfigDict(extra="forbid")

    inputs: list[str] = Field(default_factory=lambda: [PLANTED], description="Run files, folders or globs, or the "
                                                                             "word planted: the embedded data set.")
    out: str = Field(default="runs/trace", description="Output folder: one sub-folder per stage.")
    planted_runs: int = Field(default=2000, ge=100, description="Size of the embedded planted-deficit data set.")
    planted_seed: int = Field(default=0, description="Seed of the planted data set (and of its routing tasks).")
    skip_invalid: bool = Field(default=False, description="Skip runs that do not parse instead of failing.")
    llm: str | None = Field(default=None, description="PROVIDER:MODEL for the LLM proposer; offline when unset.")
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible server URL of the LLM proposer.")
    model: str = Field(default="auto", description="The model to train and evaluate: auto (smollm2 when fetched, "
                                                   "else tiny), tiny, smollm2, a path or a hub id.")
    max_capabilities: int | None = Field(default=None, ge=1, description="Train only the top ones by Delta.")
    capabilities: list[str] | None = Field(
        default=None, description="Train only these mined capabilities, by name (before max_capabilities applies).")
    mine: MineOptions = Field(default_factory=MineOptions, description="Mining: thresholds, proposal and labels.")
    train: TrainOptions = Field(default_factory=TrainOptions, description="Training of each capability's adapter.")
    eval: EvalOptions = Field(default_factory=EvalOptions, description="Evaluation before and after training.")
    route_tasks: int = Field(default=300, ge=1, description="Fresh planted tasks the router is measured on.")
    route_method: Literal["lexical", "model", "retrieval"] = Field(
        default="lexical", description="The router the run measures: lexical (no model; the best on planted tasks), "
        "model or retrieval (the base model scores labels; retrieval votes by the nearest mined runs).")

    @model_validator(mode="before")
    @classmethod
    def _over_the_run_preset(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        moved = [hint for key in data if key not in cls.model_fields and (hint := _moved(key))]
        if moved:
            raise ValueError("; ".join(moved) + f" (a RunConfig has the sections {', '.join(SECTIONS)}: see "
                                                "`trace-envs run --help`)")
        return layer(RUN.values, data)


RUN = Preset(
    name="run",
    about="`trace-envs run`: a short GRPO run per capability after a warm start, for a small model, and a quick "
          "evaluation (`trace-envs train` keeps the models' defaults, the paper's recipe)",
    values={
        "train": {"steps": 8, "num_generations": 4, "learning_rate": 5e-5,
                  "warm_start": True, "sft_episodes": 16, "sft_epochs": 1.0},
        "eval": {"episodes": 6, "max_new_tokens": 128},
    },
)

# SmolLM2-135M trains at about 100 tokens a second on 2 cores and mined envs carry 1,000-3,000-token prompts, so the
# GPU-sized values would take hours.
CPU = Preset(
    name="cpu",
    about="a run on a machine without a GPU: the top capability, a short warm start, 2 GRPO steps, 3 evaluation seeds",
    values={
        "max_capabilities": 1,
        "train": {"steps": 2, "num_generations": 2, "sft_episodes": 8,
                  "sft_learning_rate": 1e-3, "sft_batch_size": 1, "lora_dropout": 0.0},
        "eval": {"episodes": 3, "max_turns": 8},
    },
)
CPU_BF16 = Preset(name="cpu-bf16", about="bf16 autocast on a CPU that computes bf16 natively",
                  values={"train": {"bf16": True}})

# The two capabilities `demo` trains with SmolLM2. The demo's budget (15 minutes on 2 cores, about 100 training tokens a
# second) buys a 20-episode warm start and one GRPO group of 2 (one of them hinted) per capability; these two decide on
# a fact a 135M model picks up from that many episodes (the user's yes or no; what the user asks for). The top two by
# Delta do not: on the app env the warm start learns the procedure but always asks for the same fix (success 0.50, the
# larger class), and the exchange env needs a price comparison over five variants (0.00). See docs/figures.md.
DEMO_CAPABILITIES = ["confirm_before_cancel_order", "hand_off_with_transfer_to_human_agents"]
DEMO = CPU.extend(
    name="demo",
    about="`trace-envs demo` with SmolLM2-135M: `DEMO_CAPABILITIES`, a 20-episode warm start (LoRA learning rate 1e-3, "
          "1 episode a step, no LoRA dropout), 1 GRPO step of 2 rollouts (1 hinted), 10 held-out evaluation seeds of "
          "at most 6 turns before and after",
    values={"max_capabilities": None, "capabilities": DEMO_CAPABILITIES,
            "train": {"steps": 1, "sft_episodes": 20}, "eval": {"episodes": 10, "max_turns": 6, "max_new_tokens": 96}},
)
DEMO_TINY = Preset(name="demo-tiny", about="`trace-envs demo --model tiny`: a smoke run of the top 3 by Delta",
                   values={"max_capabilities": 3, "train": {"steps": 4}})
PRESETS = {p.name: p for p in (RUN, CPU, CPU_BF16, DEMO, DEMO_TINY)}


def for_hardware(hardware: Hardware) -> list[Preset]:
    """The presets a run layers under the user's options on this machine: none with a GPU; else `CPU`, and bf16
    where the CPU computes it natively."""
    if hardware.gpu:
        return []
    return [CPU, CPU_BF16] if hardware.cpu_bf16 else [CPU]


def load_run_config(path: str | Path | None = None, flags: Mapping[str, Any] | None = None,
                    presets: Iterable[Preset] = ()) -> tuple[RunConfig, list[str]]:
    """A RunConfig from a YAML/JSON file, the command line's `flags` over it (dotted names such as `train.steps`;
    None: not given), and `presets` under both; and the dotted names of the options the presets changed (those the
    user left unset, where the preset's value differs), sorted. Raises pydantic's ValidationError (a ValueError)
    naming each option out of range or unknown, OSError for an unreadable file."""
    presets = list(presets)
    user = layer(read_mapping(path) if path else {}, undotted({k: v for k, v in (flags or {}).items() if v is not None}))
    config = RunConfig.model_validate(layer(*(p.values for p in presets), user))
    if not presets:
        return config, []
    plain = RunConfig.model_validate(user)
    names = {name for p in presets for name in dotted(p.values)}
    return config, sorted(n for n in names if option_value(config, n) != option_value(plain, n))


def choose_model(model: str) -> tuple[str, str]:
    """The model to train, and why: `auto` takes smollm2 when its weights are already fetched, else `tiny`."""
    if model != "auto":
        return model, f"{model} (as asked)"
    try:
        fetched = training().model_fetched("smollm2")
    except TrainingUnavailable:
        fetched = False
    if fetched:
        return "smollm2", "smollm2 (SmolLM2-135M-Instruct, fetched with `make model`)"
    return "tiny", "tiny (a tiny random model; run `make model` to train SmolLM2-135M-Instruct instead)"


def demo_config(out: str = "runs/demo", model: str = "smollm2", hardware: Hardware | None = None) -> RunConfig:
    """`trace-envs demo`: the planted data set end to end on a 2-core CPU, `DEMO` with SmolLM2-135M (bf16 where the
    CPU has it), `DEMO_TINY` with `tiny` (a random model, for a smoke run)."""
    if choose_model(model)[0] == "tiny":
        presets = [DEMO_TINY]
    else:
        bf16 = (hardware or training().hardware()).cpu_bf16
        presets = [DEMO, CPU_BF16] if bf16 else [DEMO]
    return load_run_config(None, {"out": out, "model": model}, presets)[0]


def describe_options() -> list[str]:
    """One line per option of a RunConfig, `name: value` as `run` starts from it, the run preset's changes marked
    with the model's own default, and what it does: the `--help` of `trace-envs run`."""
    start = RunConfig()
    lines = []
    for key, info in RunConfig.model_fields.items():
        if key not in SECTIONS:
            lines.append(f"{key}: {getattr(start, key)}  {info.description}")
            continue
        model = SECTIONS[key]
        for name, field in model.model_fields.items():
            value = option_value(start, f"{key}.{name}")
            own = field.get_default(call_default_factory=True)
            mark = f" (run preset; {model.__name__} default {own})" if value != own else ""
            lines.append(f"{key}.{name}: {value}{mark}  {field.description}")
    return lines
