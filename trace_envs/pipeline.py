"""`trace-envs run`: the whole TRACE pipeline into one output folder, resumable.

    inspect -> mine -> generate -> check -> train -> eval -> route

Each stage writes its outputs under OUT/<stage>/ and, last, a `.done.json` recording a fingerprint of what it was
computed from (input files, options, upstream outputs). A rerun skips every stage whose fingerprint still matches, so an
interrupted run resumes where it stopped; change an option and that stage and the ones after it run again. This module
sits on top of every layer (the only library module that imports them all, as the CLI does); the training stack
(`adapters_train`, torch) is imported inside the train and eval stages only, so the earlier stages run without it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from trace_envs.atomic import write_bytes_atomic, write_text_atomic

STAGES = ("inspect", "mine", "generate", "check", "train", "eval", "route")
PLANTED = "planted"


class RunConfig(BaseModel):
    """Everything `trace-envs run` does, as data (flags or a YAML/JSON `--config` file)."""

    inputs: list[str] = Field(default_factory=lambda: [PLANTED], description="Run files/dirs/globs, or 'planted'.")
    out: str = "runs/trace"
    planted_runs: int = Field(default=2000, ge=100, description="Size of the embedded planted-deficit data set.")
    planted_seed: int = 0
    skip_invalid: bool = False
    # mining
    llm: str | None = Field(default=None, description="PROVIDER:MODEL for the LLM proposer; offline when unset.")
    base_url: str | None = None
    rho: float = 0.10
    delta: float = 0.20
    k: int = 8
    n: int = 10
    max_capabilities: int | None = Field(default=None, ge=1, description="Train only the top ones by Delta.")
    capabilities: list[str] | None = Field(
        default=None, description="Train only these mined capabilities, by name (before max_capabilities applies)."
    )
    # training
    model: str = Field(default="auto", description="auto (smollm2 when fetched, else tiny), tiny, smollm2, a path, a hub id.")
    steps: int = Field(default=8, ge=1, description="GRPO steps per capability.")
    num_generations: int = Field(default=4, ge=2)
    learning_rate: float = 5e-5
    max_completion_length: int = 256
    warm_start: bool = True
    sft_episodes: int = 16
    sft_epochs: float = 1.0
    sft_learning_rate: float = 2e-4
    sft_batch_size: int = Field(default=4, ge=1, description="Episodes per warm-start optimizer step.")
    lora_dropout: float = Field(default=0.05, ge=0.0, lt=1.0, description="0 saves about a fifth of a CPU step.")
    bf16: bool = Field(default=False, description="bf16 autocast in training (faster on a CPU with AVX512-BF16/AMX).")
    train_config: str | None = Field(default=None, description="A TrainConfig file (every TRL option).")
    # evaluation and routing
    eval_episodes: int = Field(default=6, ge=1)
    eval_max_new_tokens: int = 128
    eval_max_turns: int | None = Field(default=None, ge=1, description="Assistant turns per evaluation episode "
                                       "(default: the env's max_turns); a looping model then costs less to evaluate.")
    route_tasks: int = 300
    route_method: Literal["lexical"] = "lexical"


# The RunConfig options that are TrainConfig fields of the same name: passed to training and fingerprinted by the train
# stage from this one list, so an option cannot reach training without a change to it retraining.
TRAIN_OPTIONS = ("steps", "num_generations", "learning_rate", "max_completion_length", "warm_start", "sft_episodes",
                 "sft_epochs", "sft_learning_rate", "sft_batch_size", "lora_dropout", "bf16")


class CapabilityNotMinedError(ValueError):
    """`capabilities` names one that mining did not keep."""


class StageResult(BaseModel):
    stage: str
    skipped: bool
    seconds: float
    summary: str


def resolve_auto_model(model: str) -> tuple[str, str]:
    """The model to train, and why: `auto` takes smollm2 when its weights are already fetched, else `tiny`."""
    if model != "auto":
        return model, f"{model} (as asked)"
    from adapters_train.models import SMOLLM2_FILE, cache_dir

    if (cache_dir() / "smollm2" / SMOLLM2_FILE).is_file():
        return "smollm2", "smollm2 (SmolLM2-135M-Instruct, fetched with `make model`)"
    return "tiny", "tiny (a tiny random model; run `make model` to train SmolLM2-135M-Instruct instead)"


# The two capabilities `demo` trains with SmolLM2. The demo's budget (15 minutes on 2 cores, about 100 training tokens a
# second) buys a 20-episode warm start per capability; these two decide on a fact a 135M model picks up from that
# many episodes (the user's yes or no; what the user asks for). The top two by Delta do not: on the app env the warm
# start learns the procedure but always asks for the same fix (success 0.50, the larger class), and the exchange env
# needs a price comparison over five variants (0.00). See the README's demo section.
DEMO_CAPABILITIES = ["confirm_before_cancel_order", "hand_off_with_transfer_to_human_agents"]


def demo_config(out: str = "runs/demo", model: str = "smollm2") -> RunConfig:
    """`trace-envs demo`: the planted data set end to end on a 2-core CPU. With SmolLM2-135M (the default) it trains
    `DEMO_CAPABILITIES`: a 20-episode warm start (LoRA learning rate 1e-3, 1 episode a step, no LoRA dropout, bf16
    where the CPU has it), 1 GRPO step of 2 rollouts, 3 held-out evaluation seeds of at most 8 turns before and after. With `tiny` (a
    random model, for a smoke run) the top 3 by Delta get a short run each."""
    resolved, _ = resolve_auto_model(model)
    if resolved == "tiny":
        return RunConfig(out=out, model=model, max_capabilities=3, steps=4, eval_episodes=6)
    from adapters_train.config import cpu_has_native_bf16

    return RunConfig(
        out=out, model=model, capabilities=DEMO_CAPABILITIES, steps=1, num_generations=2, max_completion_length=96,
        sft_episodes=20, sft_batch_size=1, sft_learning_rate=1e-3, lora_dropout=0.0, bf16=cpu_has_native_bf16(),
        eval_episodes=3, eval_max_new_tokens=96, eval_max_turns=8,
    )


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _file_stamp(paths: list[Path]) -> list[tuple[str, int, int]]:
    return [(str(p), p.stat().st_size, int(p.stat().st_mtime)) for p in paths]


class Pipeline:
    """Runs the stages in order; `progress(stage_index, stage_name, message)` is told as each starts."""

    def __init__(self, config: RunConfig, progress: Callable[[int, str, str], None] | None = None):
        self.cfg = config
        self.out = Path(config.out)
        self.progress = progress or (lambda i, s, m: None)
        self.results: list[StageResult] = []
        self.model, self.model_note = resolve_auto_model(config.model)

    # ---- bookkeeping ---------------------------------------------------------------------------------------------
    def _done_file(self, stage: str) -> Path:
        return self.out / stage / ".done.json"

    def _fresh(self, stage: str, fingerprint: str) -> bool:
        f = self._done_file(stage)
        try:
            return json.loads(f.read_text()).get("fingerprint") == fingerprint
        except (OSError, ValueError):
            return False

    def _finish(self, stage: str, fingerprint: str, summary: str) -> None:
        write_text_atomic(self._done_file(stage), json.dumps({"fingerprint": fingerprint, "summary": summary}) + "\n")

    def _stage(self, index: int, stage: str, fingerprint: str, fn: Callable[[], str]) -> str:
        t0 = time.perf_counter()
        if self._fresh(stage, fingerprint):
            summary = json.loads(self._done_file(stage).read_text()).get("summary", "")
            self.progress(index, stage, f"{stage}: up to date, skipped")
            self.results.append(StageResult(stage=stage, skipped=True, seconds=0.0, summary=summary))
            return fingerprint
        self.progress(index, stage, f"{stage}: running")
        (self.out / stage).mkdir(parents=True, exist_ok=True)
        summary = fn()
        self._finish(stage, fingerprint, summary)
        seconds = time.perf_counter() - t0
        self.progress(index + 1, stage, f"{stage}: {summary} ({seconds:.1f}s)")
        self.results.append(StageResult(stage=stage, skipped=False, seconds=seconds, summary=summary))
        return fingerprint

    # ---- data ------------------------------------------------------------------------------------------------------
    def input_files(self) -> list[Path]:
        if self.cfg.inputs == [PLANTED]:
            path = self.out / "data" / "planted.jsonl"
            if not path.is_file():
                from trace_envs.datasets.planted import generate_planted, write_jsonl

                write_jsonl(generate_planted(self.cfg.planted_runs, self.cfg.planted_seed), path)
            return [path]
        from trace_envs.trajectories.loaders import expand_paths

        return [path for path, _ in expand_paths(self.cfg.inputs)]

    def load(self):
        from trace_envs.trajectories.loaders import load_runs

        if not hasattr(self, "_runs"):
            sources = self.input_files() if self.cfg.inputs == [PLANTED] else self.cfg.inputs
            self._runs = load_runs(sources, skip_invalid=self.cfg.skip_invalid)
        return self._runs

    def specs(self) -> list[Any]:
        from trace_envs.spec.io import load_specs

        path = self.out / "mine" / "capabilities.json"
        specs = load_specs(path)
        if self.cfg.capabilities:
            by_name = {s.name: s for s in specs}
            missing = [n for n in self.cfg.capabilities if n not in by_name]
            if missing:
                raise CapabilityNotMinedError(
                    f"capabilities: {', '.join(missing)} not among the {len(specs)} mined in {path} "
                    f"({', '.join(by_name) or 'none'})"
                )
            specs = [by_name[n] for n in self.cfg.capabilities]
        return specs[: self.cfg.max_capabilities] if self.cfg.max_capabilities else specs

    def env_ids(self) -> list[str]:
        return [f"trace/{s.name}" for s in self.specs() if (self.out / "envs" / s.name / "env.py").is_file()]

    def register_envs(self) -> None:
        from trace_envs.registry import register_all

        folder = str((self.out / "envs").resolve())
        paths = [p for p in os.environ.get("TRACE_ENVS_PATH", "").split(os.pathsep) if p]
        if folder not in paths:
            os.environ["TRACE_ENVS_PATH"] = os.pathsep.join([*paths, folder])
        register_all()

    # ---- stages ----------------------------------------------------------------------------------------------------
    def run(self) -> list[StageResult]:
        cfg = self.cfg
        files = self.input_files()
        fp = _hash({"files": _file_stamp(files), "skip_invalid": cfg.skip_invalid})
        fp = self._stage(0, "inspect", fp, self.stage_inspect)
        mine_opts = cfg.model_dump(include={"llm", "base_url", "rho", "delta", "k", "n"})
        fp = self._stage(1, "mine", _hash([fp, mine_opts]), self.stage_mine)
        caps = (self.out / "mine" / "capabilities.json").read_bytes()
        fp = self._stage(2, "generate", _hash([fp, hashlib.sha256(caps).hexdigest(), cfg.max_capabilities, cfg.capabilities]), self.stage_generate)
        self.register_envs()
        fp = self._stage(3, "check", fp, self.stage_check)
        train_opts = cfg.model_dump(include={*TRAIN_OPTIONS, "train_config"})
        fp = self._stage(4, "train", _hash([fp, self.model, train_opts]), self.stage_train)
        fp = self._stage(5, "eval", _hash([fp, cfg.eval_episodes, cfg.eval_max_new_tokens, cfg.eval_max_turns]), self.stage_eval)
        self._stage(6, "route", _hash([fp, cfg.route_tasks, cfg.route_method]), self.stage_route)
        return self.results

    def stage_inspect(self) -> str:
        from trace_envs.trajectories.loaders import summarize
        from trace_envs.trajectories.profile import build_profile

        loaded = self.load()
        summary = summarize(loaded.runs)
        profile = build_profile(loaded.runs)
        doc = {**summary, "skipped": len(loaded.skipped), "tools": {n: {"calls": t.calls, "kind": t.kind} for n, t in profile.tools.items()}}
        write_text_atomic(self.out / "inspect" / "summary.json", json.dumps(doc, indent=2, default=str) + "\n")
        return f"{summary['runs']} runs ({summary['passed']} passed, {summary['failed']} failed), {len(profile.tools)} tools"

    def stage_mine(self) -> str:
        from trace_envs.mining.pipeline import MineOptions, mine
        from trace_envs.mining.report import write_outputs

        llm = None
        if self.cfg.llm:
            from trace_envs.mining.llm import LLMClient

            llm = LLMClient(self.cfg.llm, base_url=self.cfg.base_url)
        opts = MineOptions(rho=self.cfg.rho, delta=self.cfg.delta, k=self.cfg.k, n=self.cfg.n)
        result = mine(self.load().runs, options=opts, llm=llm)
        write_outputs(result, self.out / "mine")
        return f"{len(result.candidates)} candidates, {len(result.capabilities)} kept"

    def stage_generate(self) -> str:
        from trace_envs.generate.publish import generate_one

        specs = self.specs()
        results = []
        for i, spec in enumerate(specs, 1):
            self.progress(2, "generate", f"generate: {spec.name} ({i} of {len(specs)})")
            results.append(generate_one(spec, self.out / "envs"))
        doc = [r.model_dump(mode="json") for r in results]
        write_text_atomic(self.out / "generate" / "results.json", json.dumps(doc, indent=2) + "\n")
        failed = [r.name for r in results if not r.published]
        return f"{len(results) - len(failed)} of {len(results)} envs published" + (f"; failed: {failed}" if failed else "")

    def stage_check(self) -> str:
        from trace_envs.generate.validate import report_dict, validate_env
        from trace_envs.registry import load_env_class

        reports = {}
        env_ids = self.env_ids()
        for i, env_id in enumerate(env_ids, 1):
            self.progress(3, "check", f"check: {env_id} ({i} of {len(env_ids)})")
            name = env_id.split("/", 1)[1]
            cls = load_env_class(str(self.out / "envs" / name / "env.py"))
            reports[env_id] = report_dict(validate_env(cls))
        write_text_atomic(self.out / "check" / "report.json", json.dumps(reports, indent=2) + "\n")
        ok = sum(r["ok"] for r in reports.values())
        return f"{ok} of {len(reports)} envs pass"

    def train_config(self, env_id: str) -> Any:
        from adapters_train.config import load_config

        return load_config(self.cfg.train_config, env_id=env_id, model=self.model, out=str(self.out / "adapters"),
                           **self.cfg.model_dump(include=set(TRAIN_OPTIONS)))

    def stage_train(self) -> str:
        """One adapter per env; each finished adapter is marked, so a run interrupted mid-stage keeps what it trained."""
        from adapters_train.grpo import train_grpo

        trained = reused = 0
        env_ids = self.env_ids()
        for i, env_id in enumerate(env_ids, 1):
            cfg = self.train_config(env_id)
            marker = self.out / "train" / f"{env_id.split('/', 1)[1]}.json"
            fingerprint = _hash([env_id, self._env_hash(env_id), repr(cfg)])
            done = _read_json(marker)
            if done and done.get("fingerprint") == fingerprint and (self.adapter_dir(env_id) / "adapter_config.json").is_file():
                reused += 1
                self.progress(4, "train", f"train: {env_id} ({i} of {len(env_ids)}): adapter up to date, kept")
                continue
            self.progress(4, "train", f"train: {env_id} ({i} of {len(env_ids)}) with {self.model}, "
                                      f"metrics in {self.adapter_dir(env_id)}.metrics.jsonl")
            result = train_grpo(cfg)
            write_text_atomic(marker, json.dumps({"fingerprint": fingerprint, "steps": result.steps,
                                                  "final_reward": result.final_reward}) + "\n")
            trained += 1
        return f"{trained + reused} adapters with {self.model} ({trained} trained, {reused} kept from an interrupted run)"

    def _env_hash(self, env_id: str) -> str | None:
        spec = _read_json(self.out / "envs" / env_id.split("/", 1)[1] / "spec.json") or {}
        return spec.get("spec_hash")

    def adapter_dir(self, env_id: str) -> Path:
        return self.out / "adapters" / env_id.split("/", 1)[1]

    def stage_eval(self) -> str:
        from adapters_train.evaluate import evaluate

        doc = {}
        env_ids = self.env_ids()
        for i, env_id in enumerate(env_ids, 1):
            kw = {"max_new_tokens": self.cfg.eval_max_new_tokens, "progress": True, "max_turns": self.cfg.eval_max_turns}
            self.progress(5, "eval", f"eval: {env_id} ({i} of {len(env_ids)}), {self.model} before training")
            before = evaluate(env_id, f"hf:{self.model}", episodes=self.cfg.eval_episodes, **kw)
            self.progress(5, "eval", f"eval: {env_id} ({i} of {len(env_ids)}), {self.model} with its adapter")
            after = evaluate(env_id, f"hf:{self.model}+{self.adapter_dir(env_id)}", episodes=self.cfg.eval_episodes, **kw)
            doc[env_id] = {"before": before.to_dict(), "after": after.to_dict()}
        write_text_atomic(self.out / "eval" / "report.json", json.dumps(doc, indent=2, default=str) + "\n")
        chart = before_after_chart(doc, self.out / "eval" / "before_after.png", self.model)
        return (f"{len(doc)} envs evaluated on {self.cfg.eval_episodes} held-out seeds, before and after training"
                + (f"; chart {chart}" if chart else ""))

    def stage_route(self) -> str:
        from trace_envs.routing import RouterIndex, accuracy, candidates_from_specs, save_index, uncovered_openings
        from trace_envs.spec.io import load_specs

        runs = self.load().runs
        specs = self.specs()
        chosen = {s.name for s in specs}
        others = [s for s in load_specs(self.out / "mine" / "capabilities.json") if s.name not in chosen]
        openings = {r.run_id: r.first_user_message() for r in runs}
        adapters = {s.name: str(self.adapter_dir(f"trace/{s.name}")) for s in specs}
        index = RouterIndex(
            candidates=candidates_from_specs(specs, openings, adapters),
            none_examples=uncovered_openings(specs, others, openings),
        )
        save_index(index, self.out / "adapters")
        router = index.router()
        if self.cfg.inputs == [PLANTED]:
            from trace_envs.routing.planted import planted_tasks

            tasks = planted_tasks(specs, self.cfg.route_tasks, seed=self.cfg.planted_seed + 1_000)
            how = f"{len(tasks)} fresh planted tasks"
        else:  # no held-out truth in user data: the failed runs that lacked each capability (in-sample)
            tasks = [(openings[rid], {s.name}) for s in specs for rid in s.evidence.lacking_failed if rid in openings]
            how = f"{len(tasks)} mined failing runs (in-sample)"
        acc = accuracy(router, tasks)
        write_text_atomic(
            self.out / "route" / "report.json",
            json.dumps({"method": "lexical", "accuracy": acc, "tasks": len(tasks), "on": how}, indent=2) + "\n",
        )
        return f"lexical router accuracy {acc:.3f} on {how}"

    # ---- the final table ----------------------------------------------------------------------------------------------
    def final_rows(self) -> list[dict[str, Any]]:
        checks = _read_json(self.out / "check" / "report.json") or {}
        evals = _read_json(self.out / "eval" / "report.json") or {}
        rows = []
        for spec in self.specs():
            env_id = f"trace/{spec.name}"
            check = checks.get(env_id, {})
            ev = evals.get(env_id, {})
            rows.append(
                {
                    "capability": spec.name,
                    "family": spec.family,
                    "cov": spec.evidence.cov,
                    "delta": spec.evidence.delta,
                    "check": "pass" if check.get("ok") else ("fail" if check else "-"),
                    "reward_before": ev.get("before", {}).get("mean_reward"),
                    "reward_after": ev.get("after", {}).get("mean_reward"),
                    "success_before": ev.get("before", {}).get("success_rate"),
                    "success_after": ev.get("after", {}).get("success_rate"),
                }
            )
        return rows

    def router_accuracy(self) -> dict[str, Any] | None:
        return _read_json(self.out / "route" / "report.json")


def before_after_chart(doc: dict[str, Any], path: Path, model: str) -> Path | None:
    """Success and mean reward on the held-out seeds before and after training, one pair of bars per capability, as a
    PNG at `path` (written atomically); None when matplotlib (the `plot` extra) is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import textwrap

    names = [textwrap.fill(env_id.split("/", 1)[1].replace("_", " "), 22) for env_id in doc]
    fig, axes = plt.subplots(1, 2, figsize=(max(9.0, 3.2 * len(names) + 3), 4.8), squeeze=False)
    for ax, (key, label) in zip(axes[0], [("success_rate", "success"), ("mean_reward", "mean reward")]):
        xs = range(len(names))
        before = [doc[e]["before"].get(key) or 0.0 for e in doc]
        after = [doc[e]["after"].get(key) or 0.0 for e in doc]
        for offset, values, what, color in ((-0.2, before, "before training", "#bbbbbb"),
                                            (0.2, after, "after (warm start + GRPO)", "#2e7d32")):
            bars = ax.bar([x + offset for x in xs], values, width=0.4, label=what, color=color)
            ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7)  # a 0.00 bar is still read
        ax.set_xticks(list(xs), names, fontsize=7)
        ax.set_ylim(0, 1.15)
        ax.set_title(f"{label} on held-out seeds")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{model}: before and after training, per capability", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=110, format="png")
    plt.close(fig)
    return write_bytes_atomic(path, buffer.getvalue())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# `run` on a machine without a GPU: SmolLM2-135M trains at about 100 tokens a second on 2 cores and mined envs carry
# 1,000-3,000-token prompts, so the GPU-sized defaults above would take hours. Only options the user left unset change.
CPU_SIZED: dict[str, Any] = {
    "max_capabilities": 1, "steps": 2, "num_generations": 2, "max_completion_length": 128, "sft_episodes": 8,
    "sft_learning_rate": 1e-3, "sft_batch_size": 1, "lora_dropout": 0.0, "eval_episodes": 3, "eval_max_turns": 8,
}


def size_for_cpu(cfg: RunConfig) -> tuple[RunConfig, list[str]]:
    """`cfg` with the CPU-sized values (`CPU_SIZED`, plus bf16 where the CPU has it natively) for every option not set
    explicitly, when no GPU is present; and the names of the options it changed."""
    import torch

    if torch.cuda.is_available():
        return cfg, []
    from adapters_train.config import cpu_has_native_bf16

    sized = {**CPU_SIZED, "bf16": cpu_has_native_bf16()}
    changes = {k: v for k, v in sized.items() if k not in cfg.model_fields_set and getattr(cfg, k) != v}
    return cfg.model_copy(update=changes), sorted(changes)


def load_run_config(path: str | Path | None, **overrides: Any) -> RunConfig:
    """A RunConfig from a YAML/JSON file, with command-line overrides (None means: keep the file's value)."""
    data: dict[str, Any] = {}
    if path:
        from adapters_train.config import read_mapping

        data = read_mapping(path)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return RunConfig.model_validate(data)
