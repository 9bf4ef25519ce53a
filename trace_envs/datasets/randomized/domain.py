"""A drawn domain: a `PlantedDomain` whose theme, tool names, record and error shapes, request turn, option count,
source format, expected actions, families and rates come from a seed, plus its truth and its scoring.

    from trace_envs.datasets.randomized import random_domain
    dom = random_domain(7)
    runs = dom.runs()
    path = dom.write_runs(runs, "out/")   # the domain's source format; out/<name>.truth.json beside it
    dom.score_recovery(capabilities)      # the kept capabilities of `trace-envs mine`, as dicts
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from trace_envs.datasets import writers
from trace_envs.datasets.randomized.axes import NOISE_RATES, draw_axes, draw_families
from trace_envs.datasets.randomized.core import DECOY, Core
from trace_envs.datasets.randomized.kinds import KINDS
from trace_envs.datasets.randomized.naming import Naming
from trace_envs.datasets.randomized.shapes import Shapes
from trace_envs.datasets.randomized.talk import Talk
from trace_envs.datasets.randomized.themes import THEMES, article, plural
from trace_envs.datasets.sim import PlantedDeficit, PlantedDomain, TaskKind, write_atomically
from trace_envs.trajectories.models import Run

TRIALS = 5
TASKS_PER_FAMILY = 16


@dataclass
class RandomDomain(PlantedDomain):
    """A `PlantedDomain` drawn from `seed` along the axes of `trace_envs.datasets.randomized.axes`.

    Attributes (beside a planted domain's):
        seed: what it was drawn from.
        axes: the value of every axis (also in every run's `meta["axes"]`).
        families: the families it plants a deficit of, each with its rate.
        n_tasks: tasks in its data set; each runs `trials` times.
    """

    seed: int = 0
    axes: dict[str, Any] = field(default_factory=dict)
    families: dict[str, float] = field(default_factory=dict)
    n_tasks: int = 0
    decoy_tool: str = ""

    def task_of(self, rng: random.Random, task_index: int) -> tuple[TaskKind, Any]:
        """Task `task_index`'s kind from a schedule that gives each kind its share of the domain's `n_tasks` tasks
        (shuffled; a data set longer than `n_tasks` repeats it with a new shuffle), and its task, planned by the kind
        from the customer and the task's place among the kind's tasks (`plan(rng, person, k)`), so that each kind's
        deficit matters in its share of them."""
        block, pos = divmod(task_index, self.n_tasks)
        order, counts = self._schedule(block)
        name = order[pos]
        k = block * counts[name] + order[:pos].count(name)
        kind = self.kinds[name]
        return kind, kind.plan(rng, self.draw(rng), k)

    def flags_of(self, rng: random.Random, rates: dict[str, float], run_idx: int) -> dict[str, bool]:
        """Each deficit's flag spread evenly over a task's trials (a low-discrepancy sequence from a random start
        per task and deficit): a task of five trials at rate 0.3 has the deficit in one or two of them, never in
        none or all by chance, so every planted deficit shows in its share of the runs."""
        task, trial = divmod(run_idx, self.trials)
        out = {}
        for name, rate in sorted(rates.items()):
            start = random.Random(f"flags:{self.seed}:{task}:{name}").random()
            out[name] = (start + trial * 0.6180339887498949) % 1.0 < rate
        return out

    def _schedule(self, block: int) -> tuple[list[str], dict[str, int]]:
        names = sorted(self.kinds)
        total = sum(self.kinds[n].share for n in names)
        quota = {n: self.kinds[n].share / total * self.n_tasks for n in names}
        counts = {n: max(1, int(q)) for n, q in quota.items()}
        by_remainder = sorted(names, key=lambda n: (counts[n] - quota[n], n))
        i = 0
        while sum(counts.values()) < self.n_tasks:
            counts[by_remainder[i % len(names)]] += 1
            i += 1
        while sum(counts.values()) > self.n_tasks:
            counts[max(names, key=lambda n: (counts[n], n))] -= 1
        order = [n for n in names for _ in range(counts[n])]
        random.Random(f"schedule:{self.seed}:{block}").shuffle(order)
        return order, counts

    def runs(self) -> list[Run]:
        """The domain's data set: `n_tasks` tasks, `trials` runs each, in task order."""
        return self.generate(self.n_tasks * self.trials, seed=self.seed)

    # ---- writing ----------------------------------------------------------------------------------------------------
    def written(self, runs: Iterable[Run]) -> list[Run]:
        """The runs as a user's log numbers them: task ids are task numbers, the kind stays in the truth only."""
        return [r.model_copy(update={"task_id": r.task_id.rsplit("-", 1)[1]}) for r in runs]

    def write_runs(self, runs: Iterable[Run], folder: str | Path) -> Path:
        """Write `runs` under `folder` in the domain's source format, with or without expected actions as drawn, and
        the truth file `<name>.truth.json` beside them; returns what to load (a file, or the folder of ToolSandbox
        run folders)."""
        folder = Path(folder)
        runs = self.written(runs)
        fmt, actions = self.axes["source_format"], self.axes["expected_actions"] == "with"
        flag = self.axes["error_shape"] == "flag"
        if fmt == "tau-bench":
            path = writers.write_tau_bench(runs, folder / f"{self.name}.json", actions=actions)
        elif fmt == "tau2":
            path = writers.write_tau2(runs, folder / f"{self.name}_results.json", domain=self.name,
                                      policy=self.policy, actions=actions, flag_errors=flag)
        elif fmt == "openai-jsonl":
            path = writers.write_openai_jsonl(runs, folder / f"{self.name}.jsonl", actions=actions, flag_errors=flag)
        else:
            path = writers.write_toolsandbox(runs, folder / f"{self.name}_runs")
        write_atomically(folder / f"{self.name}.truth.json",
                         lambda fh: json.dump(self.truth(runs), fh, indent=1, ensure_ascii=False))
        return path

    def truth(self, runs: Iterable[Run] = ()) -> dict[str, Any]:
        """What was planted: the axes, each deficit's family (and the others that teach it), tools and rate, the
        decoy's tool, and per run (in order) its task, trial, kind, the deficits that showed, noise and reward."""
        return {
            "seed": self.seed, "domain": self.name, "axes": self.axes, "families": self.families,
            "deficits": {n: {"family": d.family, "also": list(d.also), "tools": list(d.tools), "rate": d.rate,
                             "description": d.description} for n, d in self.deficits.items()},
            "decoy_tool": self.decoy_tool,
            "runs": [{"index": i, "task_id": r.task_id, "trial": r.trial, "kind": r.meta["planted"]["task_kind"],
                      "planted": r.meta["planted"]["deficits"], "noise": r.meta["planted"]["noise"],
                      "reward": r.reward} for i, r in enumerate(runs)],
        }

    # ---- scoring ----------------------------------------------------------------------------------------------------
    def score_recovery(self, kept: Iterable[Mapping[str, Any]]) -> dict[str, Any]:  # type: ignore[override]
        """Recall and precision of kept capabilities (dicts with `family`, `tools`, `roles`, as `capabilities.json`
        holds them), as the external domains' score.py counts: a capability recovers a deficit when its tools or
        roles include one of the deficit's tools and its family is the deficit's (or one that also teaches it);
        anything else kept is a false finding (`decoy` when it names the decoy's tool)."""
        found: set[str] = set()
        right: list[str] = []
        wrong: list[dict[str, Any]] = []
        for cap in kept:
            names = {t.get("name") if isinstance(t, dict) else t for t in cap.get("tools") or []}
            names |= set((cap.get("roles") or {}).values())
            hit = {n for n, d in self.deficits.items()
                   if names & set(d.tools) and cap.get("family") in (d.family, *d.also)}
            if hit:
                found |= hit
                right.append(cap.get("name", ""))
            else:
                wrong.append({"name": cap.get("name", ""), "family": cap.get("family"),
                              "decoy": self.decoy_tool in names})
        n_kept = len(right) + len(wrong)
        return {"recall": len(found) / len(self.deficits) if self.deficits else 0.0,
                "precision": len(right) / n_kept if n_kept else None,
                "kept": n_kept, "found": sorted(found), "missed": sorted(set(self.deficits) - found),
                "false_findings": wrong}


def _intro(theme, core: Core) -> str:
    return (f"# {theme.org} assistant policy\n\n"
            f"As the {theme.org} assistant you help {plural(theme.person)} with their {theme.records}.\n\n"
            f"- Identify the {theme.person} first: look them up with {core.lookup} by their {theme.id_label}.\n"
            f"- Look {article(theme.record)} up with {core.read} before you act on it, and act only on what it shows.\n"
            f"- {core.decoy} shows the {theme.decoy}; it is for your information only and changes nothing you do.\n")


def random_domain(seed: int) -> RandomDomain:
    """The domain drawn from `seed` (deterministic: the same seed gives the same domain and the same runs)."""
    axes = draw_axes(seed)
    families = draw_families(seed)
    rng = random.Random(f"domain:{seed}")
    theme = next(t for t in THEMES if t.name == axes["theme"])
    naming = Naming.draw(axes["naming"], rng)
    shapes = Shapes.draw(axes["record_shape"], axes["error_shape"], naming, rng)
    dom = RandomDomain(name=theme.name, intro="", draw=lambda r: None, closing=lambda b: None,
                       noise_rate=rng.choice(NOISE_RATES), trials=TRIALS, seed=seed, axes=axes, families=families,
                       n_tasks=TASKS_PER_FAMILY * len(families), meta={"axes": axes})
    core = Core(dom, theme, naming, shapes, Talk(theme, axes["request_turn"]),
                user_tools=axes["source_format"] in ("tau2", "openai-jsonl"))
    core.option_count = axes["option_count"]
    dom.draw = core.draw_person
    dom.intro = _intro(theme, core)
    dom.decoy_tool = core.decoy
    for family, rate in families.items():
        KINDS[family].install(core, random.Random(f"kind:{seed}:{family}"), rate)
    dom.add_deficit(PlantedDeficit(DECOY, "none", (core.decoy,), 0.5, f"reads the optional {theme.decoy} (never "
                                   "matters)", decoy=True))
    return dom
