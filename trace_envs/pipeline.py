"""`trace-envs run`: the whole TRACE pipeline into one output folder, resumable.

    inspect -> mine -> generate -> check -> train -> eval -> route

Each stage writes its outputs under OUT/<stage>/ and, last, a `.done.json` recording a fingerprint of what it was
computed from (input files, options, upstream outputs). A rerun skips every stage whose fingerprint still matches, so an
interrupted run resumes where it stopped; change an option and that stage and the ones after it run again. This module
orchestrates and nothing else: what to do is a `RunConfig` (`trace_envs.run_config`), each stage calls its layer, and
the train and eval stages reach the training package through its seam (`trace_envs.training`), so the earlier stages
run without it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from trace_envs.atomic import write_text_atomic
from trace_envs.run_config import PLANTED, RunConfig, choose_model

STAGES = ("inspect", "mine", "generate", "check", "train", "eval", "route")


class CapabilityNotMinedError(ValueError):
    """`capabilities` names one that mining did not keep."""


class StageResult(BaseModel):
    stage: str
    skipped: bool
    seconds: float
    summary: str


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
        self.model, self.model_note = choose_model(config.model)

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
            from trace_envs.datasets.planted import planted_file

            return [planted_file(self.out / "data" / "planted.jsonl", self.cfg.planted_runs, self.cfg.planted_seed)]
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
        from trace_envs.registry import add_search_folder

        add_search_folder(self.out / "envs")

    # ---- stages ----------------------------------------------------------------------------------------------------
    def run(self) -> list[StageResult]:
        from trace_envs.generate.memo import kept_in

        cfg = self.cfg
        files = self.input_files()
        fp = _hash({"files": _file_stamp(files), "skip_invalid": cfg.skip_invalid})
        fp = self._stage(0, "inspect", fp, self.stage_inspect)
        mine_opts = {"llm": cfg.llm, "base_url": cfg.llm_base_url, **cfg.mine.model_dump()}
        with kept_in(self.out / "validation"):  # mine, generate and check validate the same specs: once
            fp = self._stage(1, "mine", _hash([fp, mine_opts]), self.stage_mine)
            caps = (self.out / "mine" / "capabilities.json").read_bytes()
            fp = self._stage(2, "generate", _hash([fp, hashlib.sha256(caps).hexdigest(), cfg.max_capabilities,
                                                   cfg.capabilities]), self.stage_generate)
            self.register_envs()
            fp = self._stage(3, "check", fp, self.stage_check)
        fp = self._stage(4, "train", _hash([fp, self.model, cfg.train.model_dump()]), self.stage_train)
        fp = self._stage(5, "eval", _hash([fp, cfg.eval.model_dump()]), self.stage_eval)
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
        from trace_envs.mining.pipeline import mine
        from trace_envs.mining.report import write_outputs

        llm = None
        if self.cfg.llm:
            from trace_envs.mining.llm import LLMClient

            llm = LLMClient(self.cfg.llm, base_url=self.cfg.llm_base_url)
        result = mine(self.load().runs, options=self.cfg.mine, llm=llm)
        write_outputs(result, self.out / "mine")
        reason = result.none_kept_reason()
        if reason:  # the stages after this one have nothing to work on: say why, and what would change it
            return "; ".join([f"{len(result.candidates)} candidates, none kept: {reason}", *result.what_to_add()])
        return f"{len(result.candidates)} candidates, {len(result.capabilities)} kept"

    def stage_generate(self) -> str:
        from trace_envs.generate.publish import generate_many

        specs = self.specs()
        finished: list[str] = []

        def done(spec: Any, _: Any) -> None:
            finished.append(spec.name)
            self.progress(2, "generate", f"generate: {spec.name} ({len(finished)} of {len(specs)})")

        results = generate_many(specs, self.out / "envs", done=done)
        doc = [r.model_dump(mode="json") for r in results]
        write_text_atomic(self.out / "generate" / "results.json", json.dumps(doc, indent=2) + "\n")
        failed = [r.name for r in results if not r.published]
        return f"{len(results) - len(failed)} of {len(results)} envs published" + (f"; failed: {failed}" if failed else "")

    def stage_check(self) -> str:
        from trace_envs.generate.memo import validated
        from trace_envs.generate.validate import report_dict, validate_env
        from trace_envs.registry import load_env_class

        reports = {}
        env_ids = self.env_ids()
        for i, env_id in enumerate(env_ids, 1):
            self.progress(3, "check", f"check: {env_id} ({i} of {len(env_ids)})")
            name = env_id.split("/", 1)[1]
            module = self.out / "envs" / name / "env.py"
            cls = load_env_class(str(module))
            reports[env_id] = report_dict(validated(cls, module.read_text(), {}, partial(validate_env, cls)))
        write_text_atomic(self.out / "check" / "report.json", json.dumps(reports, indent=2) + "\n")
        ok = sum(r["ok"] for r in reports.values())
        return f"{ok} of {len(reports)} envs pass"

    def train_config(self, env_id: str) -> Any:
        from trace_envs.training import TrainConfig

        return TrainConfig(**self.cfg.train.model_dump(), env_id=env_id, model=self.model, out=str(self.out / "adapters"))

    def stage_train(self) -> str:
        """One adapter per env; each finished adapter is marked, so a run interrupted mid-stage keeps what it trained."""
        from trace_envs.training import training

        train_grpo = training().train_grpo
        trained = reused = 0
        env_ids = self.env_ids()
        for i, env_id in enumerate(env_ids, 1):
            cfg = self.train_config(env_id)
            marker = self.out / "train" / f"{env_id.split('/', 1)[1]}.json"
            fingerprint = _hash([env_id, self._env_hash(env_id), cfg.model_dump()])
            done = _read_json(marker)
            if done and done.get("fingerprint") == fingerprint and (self.adapter_dir(env_id) / "adapter_config.json").is_file():
                reused += 1
                self.progress(4, "train", f"train: {env_id} ({i} of {len(env_ids)}): adapter up to date, kept")
                continue
            self.progress(4, "train", f"train: {env_id} ({i} of {len(env_ids)}) with {self.model}, "
                                      f"metrics in {self.adapter_dir(env_id)}.metrics.jsonl")
            result = train_grpo(cfg)
            card = _read_json(self.adapter_dir(env_id) / "trace_adapter.json") or {}
            write_text_atomic(marker, json.dumps({"fingerprint": fingerprint, "steps": result.steps,
                                                  "final_reward": result.final_reward,
                                                  "hint_fraction": cfg.hint_fraction,
                                                  # as trained: a grpo: section may set the group size
                                                  "hinted_per_group": card.get("hinted_per_group"),
                                                  "num_generations": card.get("num_generations"),
                                                  "informative_group_share": _mean(result.informative)}) + "\n")
            trained += 1
        return f"{trained + reused} adapters with {self.model} ({trained} trained, {reused} kept from an interrupted run)"

    def _env_hash(self, env_id: str) -> str | None:
        spec = _read_json(self.out / "envs" / env_id.split("/", 1)[1] / "spec.json") or {}
        return spec.get("spec_hash")

    def adapter_dir(self, env_id: str) -> Path:
        return self.out / "adapters" / env_id.split("/", 1)[1]

    def stage_eval(self) -> str:
        from trace_envs.charts import before_after_chart
        from trace_envs.evaluation import evaluate

        doc = {}
        env_ids = self.env_ids()
        options = self.cfg.eval.model_dump()
        for i, env_id in enumerate(env_ids, 1):
            self.progress(5, "eval", f"eval: {env_id} ({i} of {len(env_ids)}), {self.model} before training")
            before = evaluate(env_id, f"hf:{self.model}", progress=True, **options)
            self.progress(5, "eval", f"eval: {env_id} ({i} of {len(env_ids)}), {self.model} with its adapter")
            after = evaluate(env_id, f"hf:{self.model}+{self.adapter_dir(env_id)}", progress=True, **options)
            doc[env_id] = {"before": before.to_dict(), "after": after.to_dict()}
        write_text_atomic(self.out / "eval" / "report.json", json.dumps(doc, indent=2, default=str) + "\n")
        chart = before_after_chart(doc, self.out / "eval" / "before_after.png", self.model)
        return (f"{len(doc)} envs evaluated on {self.cfg.eval.episodes} held-out seeds, before and after training"
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
        method = self.cfg.route_method
        for cand in index.candidates:
            _name_routing(Path(cand.adapter or ""), method)
        router = index.router() if method == "lexical" else self._model_router(index, method)
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
            json.dumps({"method": method, "accuracy": acc, "tasks": len(tasks), "on": how}, indent=2) + "\n",
        )
        return f"{method} router accuracy {acc:.3f} on {how}"

    def _model_router(self, index: Any, method: str) -> Any:
        from trace_envs.routing import ModelRouter, RetrievalRouter
        from trace_envs.training import training

        loaded = training().load_model(self.model)
        if method == "model":
            return ModelRouter(index.candidates, loaded.model, loaded.tokenizer)
        return RetrievalRouter(index.candidates, loaded.model, loaded.tokenizer, none_examples=list(index.none_examples))

    # ---- the final table ----------------------------------------------------------------------------------------------
    def final_rows(self) -> list[dict[str, Any]]:
        checks = _read_json(self.out / "check" / "report.json") or {}
        evals = _read_json(self.out / "eval" / "report.json") or {}
        route = self.router_accuracy() or {}
        rows = []
        for spec in self.specs():
            env_id = f"trace/{spec.name}"
            check = checks.get(env_id, {})
            ev = evals.get(env_id, {})
            trained = _read_json(self.out / "train" / f"{spec.name}.json") or {}
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
                    # what the adapter was trained with, whether GRPO had a gradient, how the run routes tasks to it
                    "hint_fraction": trained.get("hint_fraction"),
                    "hinted": (f"{trained['hinted_per_group']} of {trained['num_generations']}"
                               if trained.get("hinted_per_group") is not None else None),
                    "informative_group_share": trained.get("informative_group_share"),
                    "routing": route.get("method"),
                }
            )
        return rows

    def router_accuracy(self) -> dict[str, Any] | None:
        return _read_json(self.out / "route" / "report.json")


def _name_routing(adapter: Path, method: str) -> None:
    """Record on an adapter's card (`trace_adapter.json` and its README table) how the run routes tasks to it."""
    meta = _read_json(adapter / "trace_adapter.json")
    if not isinstance(meta, dict):
        return
    meta["routing"] = method
    write_text_atomic(adapter / "trace_adapter.json", json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")
    card = adapter / "README.md"
    if card.is_file():
        lines = [line for line in card.read_text().splitlines() if not line.startswith("| routing |")]
        if "|---|---|" in lines:
            lines.insert(lines.index("|---|---|") + 1, f"| routing | {method} |")
            write_text_atomic(card, "\n".join(lines) + "\n")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
