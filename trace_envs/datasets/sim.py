"""What every planted-deficit domain shares: the deficit record, a run builder, tool schemas, seeded generation,
JSONL writing, scoring a miner's kept capabilities against the planted tables, and `PlantedDomain`, a domain whose
task kinds are modules that register themselves.

Domain-free: a domain (the retail one in `datasets.planted`, the help desk in `datasets.helpdesk`, or any other)
brings its policy, tools, deficit tables and simulator, and passes them in or registers them.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from trace_envs.spec.rules import PolicyRules
from trace_envs.jsontext import dumps
from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall, built

STR = {"type": "string"}
NUMBER = {"type": "number"}


def fn_schema(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An OpenAI function-tool schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


@dataclass(frozen=True)
class PlantedDeficit:
    """A planted behaviour: the capability family it belongs to, the tools involved and its per-run rate."""

    name: str
    family: str
    tools: tuple[str, ...]
    rate: float
    description: str
    decoy: bool = False
    also: tuple[str, ...] = ()
    """Other families whose capability teaches it too (a gate skipped unread: the refusal's as well as the
    precondition's)."""


class Builder:
    """Accumulates messages, tool calls and ground truth of one run, opening with the domain's policy."""

    def __init__(self, rng: random.Random, policy: str) -> None:
        self.rng = rng
        self.policy = policy
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": policy}]
        self.calls: list[ToolCall] = []
        self.flags: dict[str, bool] = {}  # the run's deficit and decoy flags, for shared steps such as a greeting

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def call(self, name: str, args: dict[str, Any], result: Any, error: bool = False) -> None:
        """The agent calls a tool; `error` marks the result as the tool's error (the text says which)."""
        self._tool_call("assistant", "agent", name, args, result, error)

    def user_call(self, name: str, args: dict[str, Any], result: Any, report: str) -> None:
        """The user runs its own tool (tau2's shape: a user message with `tool_calls`, a tool reply, then the user's
        `report` in words)."""
        self._tool_call("user", "user", name, args, result, False)
        self.user(report)

    def _tool_call(self, role: str, requestor: str, name: str, args: dict[str, Any], result: Any, error: bool) -> None:
        cid = f"call_{len(self.calls)}_{self.rng.getrandbits(32):08x}"
        idx = len(self.messages)
        call = {"id": cid, "type": "function", "function": {"name": name, "arguments": dumps(args)}}
        text = result if isinstance(result, str) else dumps(result)
        reply = {"role": "tool", "tool_call_id": cid, "name": name, "content": text}
        if requestor == "user":  # tau2 marks the user's own calls and their replies
            call["requestor"] = reply["requestor"] = "user"
        self.messages.append({"role": role, "content": None, "tool_calls": [call]})
        self.messages.append(reply)
        self.calls.append(built(ToolCall, {"id": cid, "name": name, "arguments": args, "result": text, "error": error,
                                           "error_reason": None, "requestor": requestor, "message_index": idx}))


def env_messages(env: Any) -> list[dict[str, Any]]:
    """The messages of an env, wrapped by Gymnasium or not (what a planted agent reads)."""
    return env.unwrapped.messages if hasattr(env, "unwrapped") else env.messages


def latest_record(messages: list[dict[str, Any]], key: str, value: Any = None) -> dict[str, Any] | None:
    """The latest tool result in an env's `messages` that is a JSON record holding `key` (equal to `value` when
    given): what a planted agent reads back of the records it looked up."""
    found = None
    for m in messages:
        content = m.get("content")
        if m.get("role") != "tool" or not isinstance(content, str) or not content.startswith("{"):
            continue
        try:
            data = json.loads(content)
        except ValueError:
            continue
        if isinstance(data, dict) and key in data and (value is None or data[key] == value):
            found = data
    return found


def seeded_runs(simulate: Callable[[int, random.Random], Run], n_runs: int, seed: int = 0,
                start: int = 0) -> Iterator[Run]:
    """Yield `simulate(i, rng)` for runs `start .. start + n_runs - 1`, one at a time (constant memory); run `i`
    depends only on (seed, i), so any slice of a data set can be regenerated alone."""
    for i in range(start, start + n_runs):
        yield simulate(i, random.Random(seed * 1_000_003 + i))


def finish_run(run_idx: int, rng: random.Random, b: Builder, kind: str, shown: Iterable[str], noise_rate: float, *,
               domain: str, tools: list[dict[str, Any]], ground_truth: list[GroundTruthAction], instruction: str,
               prefix: str = "planted", task_id: str | None = None, trial: int = 0,
               meta: Mapping[str, Any] | None = None, **truth: Any) -> tuple[Run, dict[str, Any]]:
    """End a planted run of task `kind` in which the deficits `shown` showed: such a run fails, and so does, at the
    noise rate, one where none showed. Returns the run (`<prefix>/<run_idx>`, task `task_id`, by default
    `<kind>-<run_idx>`, and `trial`) and its planted truth (`task_kind`, `deficits`, `noise`, then the domain's own
    `truth` fields), also kept in `run.meta` beside the domain's name and its own `meta`."""
    deficits = sorted(shown)
    noise = not deficits and rng.random() < noise_rate
    success = not deficits and not noise
    planted = {"task_kind": kind, "deficits": deficits, "noise": noise, **truth}
    run = built(Run, dict(
        run_id=f"{prefix}/{run_idx}",
        source="planted",
        file=None,
        task_id=task_id or f"{kind}-{run_idx}",
        trial=trial,
        messages=b.messages,
        tool_calls=b.calls,
        reward=1.0 if success else 0.0,
        success=success,
        policy=b.policy,
        ground_truth=ground_truth,
        tools=tools,
        instruction=instruction,
        meta={"domain": domain, **(meta or {}), "planted": planted},
    ))
    return run, planted


def run_to_record(run: Run) -> dict[str, Any]:
    """One planted run as an OpenAI-messages JSONL record that `load_runs` reads back."""
    return {
        "task_id": run.task_id,
        "trial": run.trial,
        "messages": run.messages,
        "reward": run.reward,
        "success": run.success,
        "tools": run.tools,
        "ground_truth": [g.model_dump() for g in run.ground_truth or []],
        "domain": run.meta["domain"],
        "meta": {"planted": run.meta.get("planted", {})},
    }


def write_atomically(path: str | Path, write: Callable[[Any], None]) -> Path:
    """Write a file through `write(handle)` to a temp file beside it, then `os.replace`: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_jsonl(runs: Iterable[Run], path: str | Path) -> Path:
    """Write runs as OpenAI-messages JSONL, atomically (temp file then `os.replace`)."""
    return write_atomically(path, lambda fh: fh.writelines(
        json.dumps(run_to_record(run), ensure_ascii=False) + "\n" for run in runs))


def match_deficit(deficits: Mapping[str, PlantedDeficit], decoys: Mapping[str, PlantedDeficit], family: str,
                  tools: Iterable[str]) -> str | None:
    """The planted deficit (or decoy, checked first) a capability maps to by family and involved tools, else None.

    A capability matches when its family is the deficit's and every tool it names is one of the deficit's tools.
    """
    named = set(tools)
    for table in (decoys, deficits):
        for name, d in table.items():
            if d.family == family and named and named <= set(d.tools):
                return name
    return None


def score_recovery(deficits: Mapping[str, PlantedDeficit], decoys: Mapping[str, PlantedDeficit],
                   kept: Iterable[tuple[str, Iterable[str]]]) -> dict[str, Any]:
    """Precision / recall of kept capabilities, given as (family, target tools), against `deficits`.

    precision = kept capabilities that map to a planted deficit / kept; recall = deficits with at least one kept
    capability / deficits; `decoys` and `unmatched` list what was reported wrongly.
    """
    kept = [(f, tuple(t)) for f, t in kept]
    found: set[str] = set()
    wrong_decoys: list[str] = []
    unmatched: list[str] = []
    good = 0
    for fam, tools in kept:
        m = match_deficit(deficits, decoys, fam, tools)
        if m in deficits:
            good += 1
            found.add(m)
        elif m in decoys:
            wrong_decoys.append(f"{fam}:{','.join(tools)}")
        else:
            unmatched.append(f"{fam}:{','.join(tools)}")
    return {
        "precision": good / len(kept) if kept else 0.0,
        "recall": len(found) / len(deficits) if deficits else 0.0,
        "found": sorted(found),
        "missed": sorted(set(deficits) - found),
        "decoys": wrong_decoys,
        "unmatched": unmatched,
    }


# ---- a planted domain whose task kinds are modules -------------------------------------------------------------------
@dataclass
class TaskOutcome:
    """What a task kind's simulation of one run returns: the evaluator's expected actions and the deficits that
    showed (a run where one showed fails)."""

    ground_truth: list[GroundTruthAction]
    shown: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class TaskKind:
    """One kind of planted task.

    Attributes:
        name: the kind's slug (task ids are `<name>-<run index>`, or `<name>-<task index>` with trials).
        share: its share of runs (the domain normalises the shares of its kinds).
        simulate: `(builder, rng, customer, flags) -> TaskOutcome`: write the run (the user's opening first; the system
            message is written) with the agent carrying each deficit whose flag is True.
        exposure: the deficits a task of this kind can fail from (its routing truth).
        wants: whether a generated env's opening asks for this kind (the planted agent picks the first kind that does);
            None for a kind with no planted agent for generated envs.
        step: `(state, messages) -> str | None`: the planted agent's next action in a generated env (a JSON call text
            or a sentence), None when done; `state` persists over the episode (`opening`, `flags`, and the kind's own
            scratch keys). None with `wants`.
        plan: `(rng, customer) -> task`: the fixed part of a task (what the user wants, their records), drawn once
            per task and replayed in every trial of it; `simulate` then gets the task in place of the customer. None
            draws nothing more than the customer.
    """

    name: str
    share: float
    simulate: Callable[..., TaskOutcome]
    exposure: frozenset[str]
    wants: Callable[[str], bool] | None = None
    step: Callable[[dict[str, Any], list[dict[str, Any]]], str | None] | None = None
    plan: Callable[[random.Random, Any], Any] | None = None


@dataclass
class PlantedDomain:
    """A planted domain: its policy, tools, deficits, decoys and task kinds, filled in by its modules.

    Attributes:
        name: the domain's name (`Run.meta["domain"]`).
        intro: the policy's opening paragraph; each kind adds its own with `add_policy`.
        draw: `rng -> customer`: one scenario's customer and records (passed to the kind's `simulate`).
        closing: `(builder) -> None`: the turns ending a run that did not fail mid-way.
        noise_rate: share of fully correct runs marked failed anyway (a miner must not find these).
        trials: runs per task. With 1 (the default) every run is a task of its own, drawn from the run's generator;
            with more, run `i` is trial `i % trials` of task `i // trials`, whose kind, customer and plan come from
            the task's own generator, so every trial replays the same task with its own agent (as a benchmark runs
            each task several times) and runs of one task can be contrasted.
        meta: what every run's `meta` carries beside `domain` and `planted` (a drawn domain's axes).
    """

    name: str
    intro: str
    draw: Callable[[random.Random], Any]
    closing: Callable[[Builder], None]
    noise_rate: float = 0.06
    closing_text: str = "You're welcome, have a great day!"
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_kinds: dict[str, str] = field(default_factory=dict)
    deficits: dict[str, PlantedDeficit] = field(default_factory=dict)
    decoys: dict[str, PlantedDeficit] = field(default_factory=dict)
    kinds: dict[str, TaskKind] = field(default_factory=dict)
    rules: PolicyRules = field(default_factory=PolicyRules)
    trials: int = 1
    meta: dict[str, Any] = field(default_factory=dict)
    _policy: list[str] = field(default_factory=list)

    # ---- what a kind module calls -----------------------------------------------------------------------------------
    def add_tools(self, schemas: list[dict[str, Any]], kinds: dict[str, str]) -> None:
        """Add tool schemas and their kinds (`read`, `write`, `other`); a name already known is an error."""
        for s in schemas:
            name = s["function"]["name"]
            if name in {t["function"]["name"] for t in self.tools}:
                raise ValueError(f"{self.name}: tool {name!r} is added twice")
            self.tools.append(s)
        self.tool_kinds.update(kinds)

    def add_policy(self, text: str) -> None:
        """Append a paragraph (a markdown bullet) to the domain's policy."""
        self._policy.append(text if text.endswith("\n") else text + "\n")

    def add_deficit(self, deficit: PlantedDeficit) -> None:
        table = self.decoys if deficit.decoy else self.deficits
        if deficit.name in self.deficits or deficit.name in self.decoys:
            raise ValueError(f"{self.name}: deficit {deficit.name!r} is added twice")
        table[deficit.name] = deficit

    def add_kind(self, kind: TaskKind) -> None:
        if kind.name in self.kinds:
            raise ValueError(f"{self.name}: task kind {kind.name!r} is added twice")
        unknown = kind.exposure - set(self.deficits) - set(self.decoys)
        if unknown:
            raise ValueError(f"{self.name}: task kind {kind.name!r} exposes unknown deficits {sorted(unknown)}")
        self.kinds[kind.name] = kind

    # ---- what users of the domain call ------------------------------------------------------------------------------
    @property
    def policy(self) -> str:
        return self.intro + "".join(self._policy)

    def simulate(self, run_idx: int, rng: random.Random, rates: dict[str, float], noise_rate: float,
                 task_rng: random.Random | None = None) -> Run:
        """One run (run `run_idx`), its truth in `meta["planted"]`. The task (kind, customer, plan) comes from
        `task_rng` when given (a trial of a task), else from `rng`; the agent's flags always from `rng`."""
        t = rng if task_rng is None else task_rng
        kind, task = self.task_of(t, run_idx // self.trials)
        flags = self.flags_of(rng, rates, run_idx)
        b = Builder(rng, self.policy)
        b.flags = flags
        outcome = kind.simulate(b, rng, task, flags)
        if not outcome.shown:
            self.closing(b)
        opening = next((m["content"] for m in b.messages if m["role"] == "user"), "")
        trial = {} if self.trials == 1 else {"task_id": f"{kind.name}-{run_idx // self.trials}",
                                             "trial": run_idx % self.trials}
        return finish_run(run_idx, rng, b, kind.name, outcome.shown, noise_rate, domain=self.name,
                          tools=list(self.tools), ground_truth=outcome.ground_truth, instruction=opening,
                          prefix=self.name, **trial, meta=self.meta, exposed=sorted(kind.exposure),
                          decoys=sorted(d for d in self.decoys if flags.get(d)))[0]

    def task_of(self, rng: random.Random, task_index: int) -> tuple[TaskKind, Any]:
        """The kind of task `task_index` (drawn by the kinds' shares) and its task: the customer, planned by the
        kind when it plans."""
        names = sorted(self.kinds)
        kind = self.kinds[rng.choices(names, [self.kinds[n].share for n in names])[0]]
        customer = self.draw(rng)
        return kind, customer if kind.plan is None else kind.plan(rng, customer)

    def flags_of(self, rng: random.Random, rates: dict[str, float], run_idx: int) -> dict[str, bool]:
        """Which deficits (and decoys) the agent of run `run_idx` carries: each at its rate, drawn from `rng`."""
        return {d: rng.random() < r for d, r in rates.items()}

    def iter_runs(self, n_runs: int, seed: int = 0, *, rates: dict[str, float] | None = None,
                  noise_rate: float | None = None, start: int = 0) -> Iterator[Run]:
        """Planted runs one at a time; run `i` depends only on (seed, i). `rates` override deficit rates."""
        if not self.kinds:
            raise ValueError(f"{self.name}: no task kinds are registered")
        r = {name: d.rate for name, d in {**self.deficits, **self.decoys}.items()}
        r.update(rates or {})
        noise = self.noise_rate if noise_rate is None else noise_rate
        if self.trials == 1:
            return seeded_runs(lambda i, rng: self.simulate(i, rng, r, noise), n_runs, seed, start)
        return seeded_runs(lambda i, rng: self.simulate(i, rng, r, noise, self.task_rng(seed, i // self.trials)),
                           n_runs, seed, start)

    @staticmethod
    def task_rng(seed: int, task: int) -> random.Random:
        """The generator of task `task` of a data set (what every trial of it shares)."""
        return random.Random(f"task:{seed}:{task}")

    def generate(self, n_runs: int, seed: int = 0, **kwargs: Any) -> list[Run]:
        """`n_runs` planted runs (see `iter_runs`). Deterministic for a given seed."""
        return list(self.iter_runs(n_runs, seed, **kwargs))

    def write(self, runs: Iterable[Run], path: str | Path) -> Path:
        """Write runs as a tau-bench trajectories file (a JSON list with `traj` and `info.task.actions`), atomically:
        what a user brings from their own agent. `trace_envs.datasets.writers` writes the other formats."""
        from trace_envs.datasets.writers import write_tau_bench

        return write_tau_bench(runs, path)

    def match_deficit(self, family: str, tools: Iterable[str]) -> str | None:
        return match_deficit(self.deficits, self.decoys, family, tools)

    def score_recovery(self, kept: Iterable[tuple[str, Iterable[str]]]) -> dict[str, Any]:
        return score_recovery(self.deficits, self.decoys, kept)

    def policy_agent(self, deficits: Iterable[str] = ()) -> Callable[[Any, Any, int], str]:
        """The planted agent as a policy `(env, rng, turn) -> action` for generated envs of this domain: it follows the
        policy, except for the `deficits` it carries (names of `self.deficits`)."""
        unknown = set(deficits) - set(self.deficits)
        if unknown:
            raise ValueError(f"unknown planted deficit(s) {sorted(unknown)}; known: {sorted(self.deficits)}")
        carried = set(deficits)
        state: dict[str, Any] = {}

        def policy(env: Any, rng: Any, turn: int) -> str:
            messages = env_messages(env)
            if turn == 1 or "kind" not in state:
                opening = next(m["content"] for m in messages if m.get("role") == "user")
                state.clear()
                state.update(opening=opening, flags={d: d in carried for d in self.deficits},
                             kind=next((k for k in self.kinds.values() if k.wants and k.wants(opening)), None))
            kind = state["kind"]
            action = kind.step(state, messages) if kind is not None else None
            return self.closing_text if action is None else action

        return policy
