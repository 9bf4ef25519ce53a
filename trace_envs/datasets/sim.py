"""What every planted-deficit domain shares: the deficit record, a run builder, tool schemas, seeded generation,
JSONL writing, and scoring a miner's kept capabilities against the planted tables.

Domain-free: a domain (the retail one in `datasets.planted`, or any other) brings its policy, tools, deficit tables and
simulator, and passes them in.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall

STR = {"type": "string"}


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


class Builder:
    """Accumulates messages, tool calls and ground truth of one run, opening with the domain's policy."""

    def __init__(self, rng: random.Random, policy: str) -> None:
        self.rng = rng
        self.policy = policy
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": policy}]
        self.calls: list[ToolCall] = []

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
        call = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        text = result if isinstance(result, str) else json.dumps(result)
        reply = {"role": "tool", "tool_call_id": cid, "name": name, "content": text}
        if requestor == "user":  # tau2 marks the user's own calls and their replies
            call["requestor"] = reply["requestor"] = "user"
        self.messages.append({"role": role, "content": None, "tool_calls": [call]})
        self.messages.append(reply)
        self.calls.append(ToolCall.model_construct(
            id=cid, name=name, arguments=args, result=text, error=error, requestor=requestor, message_index=idx))


def seeded_runs(simulate: Callable[[int, random.Random], Run], n_runs: int, seed: int = 0,
                start: int = 0) -> Iterator[Run]:
    """Yield `simulate(i, rng)` for runs `start .. start + n_runs - 1`, one at a time (constant memory); run `i`
    depends only on (seed, i), so any slice of a data set can be regenerated alone."""
    for i in range(start, start + n_runs):
        yield simulate(i, random.Random(seed * 1_000_003 + i))


def finish_run(run_idx: int, rng: random.Random, b: Builder, kind: str, shown: Iterable[str], noise_rate: float, *,
               domain: str, tools: list[dict[str, Any]], ground_truth: list[GroundTruthAction], instruction: str,
               **truth: Any) -> tuple[Run, dict[str, Any]]:
    """End a planted run of task `kind` in which the deficits `shown` showed: such a run fails, and so does, at the
    noise rate, one where none showed. Returns the run (`planted/<run_idx>`, task `<kind>-<run_idx>`) and its planted
    truth (`task_kind`, `deficits`, `noise`, then the domain's own `truth` fields), also kept in `run.meta`."""
    deficits = sorted(shown)
    noise = not deficits and rng.random() < noise_rate
    success = not deficits and not noise
    planted = {"task_kind": kind, "deficits": deficits, "noise": noise, **truth}
    run = Run.model_construct(
        run_id=f"planted/{run_idx}",
        source="planted",
        file=None,
        task_id=f"{kind}-{run_idx}",
        trial=0,
        messages=b.messages,
        tool_calls=b.calls,
        reward=1.0 if success else 0.0,
        success=success,
        policy=b.policy,
        ground_truth=ground_truth,
        tools=tools,
        instruction=instruction,
        meta={"domain": domain, "planted": planted},
    )
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


def write_jsonl(runs: Iterable[Run], path: str | Path) -> Path:
    """Write runs as OpenAI-messages JSONL, atomically (temp file then `os.replace`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for run in runs:
                fh.write(json.dumps(run_to_record(run), ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


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
        "recall": len(found) / len(deficits),
        "found": sorted(found),
        "missed": sorted(set(deficits) - found),
        "decoys": wrong_decoys,
        "unmatched": unmatched,
    }
