"""Print candidate assistant turns from the real runs, for hand-labelling `tests/data/labeled_turns.jsonl`.

Candidates only: the labels are set by a person reading each turn. Three kinds:
- `confirmation`: an agent text turn and the first agent write that follows it before the next user turn ends;
- `refusal_reason`: an agent text turn with a decline word ("cannot", "unable", "not able", "sorry");
- `value_told`: an agent text turn right after one or more tool results (the results are printed beside it).

Usage: python scripts/extract_turns.py KIND [--limit N] [--seed S]   (reads ../shared/data relative to the repo)
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent.parent / "shared" / "data"
SOURCES = [
    "tau-bench/gpt-4o-airline.json",
    "tau2-bench/results/gpt-4.1_airline.json",
    "tau2-bench/results/ft-gpt-4.1_airline.json",
    "tau2-bench/results/gpt-4.1_retail.json",
    "tau2-bench/results/ft-gpt-4.1_retail.json",
    "tau2-bench/telecom-results/gpt-4.1_telecom.json",
]
WRITE = re.compile(r"^(book|cancel|update|modify|return|exchange|send|refuel|enable|resume|suspend|transfer)")
DECLINE = re.compile(r"(?i)\b(cannot|can't|can not|unable|not able|not possible|not eligible|sorry)\b")


def runs(source: str):
    """(run id, messages as {role, content, calls: [(name, args)]}) of one source file."""
    data = json.loads((DATA / source).read_text())
    if isinstance(data, list):  # tau-bench
        for r in data:
            msgs = []
            for m in r["traj"]:
                calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                         for c in m.get("tool_calls") or []]
                msgs.append({"role": m["role"], "content": m.get("content"), "calls": calls})
            yield f"{r['task_id']}/{r['trial']}", msgs
    else:
        for s in data["simulations"]:
            msgs = []
            for m in s["messages"]:
                calls = [(c["name"], c["arguments"]) for c in m.get("tool_calls") or []
                         if c.get("requestor", "assistant") == "assistant"]
                msgs.append({"role": m["role"], "content": m.get("content"), "calls": calls})
            yield f"{s['task_id']}/{s.get('trial', 0)}", msgs


def candidates(kind: str, source: str):
    for run_id, msgs in runs(source):
        for i, m in enumerate(msgs):
            text = m["content"]
            if m["role"] != "assistant" or not isinstance(text, str) or not text.strip():
                continue
            row = {"source": source, "run": run_id, "index": i, "text": text}
            if kind == "confirmation":
                write = _next_write(msgs, i)
                if write:
                    yield {**row, "tool": write[0], "args": write[1]}
            elif kind == "refusal_reason" and DECLINE.search(text):
                yield row
            elif kind == "value_told" and i and msgs[i - 1]["role"] == "tool":
                results = []
                j = i - 1
                while j >= 0 and msgs[j]["role"] == "tool":
                    results.insert(0, str(msgs[j]["content"])[:600])
                    j -= 1
                yield {**row, "results": results}


def _next_write(msgs, i):
    """The first agent write after message i, provided at most one user turn comes between."""
    users = 0
    for m in msgs[i + 1:]:
        if m["role"] == "user":
            users += 1
            if users > 1:
                return None
        for name, args in m["calls"]:
            if WRITE.match(name):
                return name, args
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["confirmation", "refusal_reason", "value_told"])
    ap.add_argument("--limit", type=int, default=8, help="candidates per source")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for source in SOURCES:
        found = list(candidates(args.kind, source))
        for row in rng.sample(found, min(args.limit, len(found))):
            print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
