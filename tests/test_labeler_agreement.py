"""Agreement of the text labelers with a hand-labelled set of real assistant turns (`tests/data/labeled_turns.jsonl`).

Each row quotes one assistant message of a real run in ../shared/data (tau-bench gpt-4o airline; tau2 gpt-4.1 and a
fine-tuned gpt-4.1 on airline and retail; tau2 telecom) with the label a person gave it by reading the run:

- `confirmation`: the turn asks the user to confirm the write that followed (context: that write and its arguments);
- `refusal_reason`: the turn declines the user's request and says why;
- `value_told`: the turn tells the user the value(s) in `context.values` (taken from an earlier tool result), not as a
  paste of tool results or one of many listed candidates.

Every row runs through the library's own code, as the miner runs it: a confirmation through the
confirmation_before_write family's `label` on a run made of the turn, a user "yes" and the write; a refusal through
`checks.refusing.refuses_with_reason` (what `families.labeling.refusal` calls); a value through the `Communicated`
clause on the real run cut after the turn (its tool results and user messages kept, the agent's earlier messages
dropped so that only this turn can tell the value). `pytest -s` prints the table.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from trace_envs.checks.clauses import Communicated
from trace_envs.checks.refusing import refuses_with_reason
from trace_envs.checks.run_view import RunView
from trace_envs.checks.trace import ActionTrace
from trace_envs.families import get_family
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.models import Run, ToolCall

ROWS_FILE = Path(__file__).parent / "data" / "labeled_turns.jsonl"
DATA = Path(__file__).resolve().parents[1].parent.parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LABELERS = ("confirmation", "refusal_reason", "value_told")
MIN_AGREEMENT = 0.85
USER_YES = "Yes, please go ahead."

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="the real runs in ../shared/data are not here")


def load_rows() -> list[dict]:
    return [json.loads(line) for line in ROWS_FILE.read_text().splitlines() if line.strip()]


@lru_cache(maxsize=None)
def runs_of(source: str) -> dict[str, Run]:
    return {f"{r.task_id}/{r.trial}": r for r in load_runs(DATA / source).runs}


def real_run(row: dict) -> Run:
    run = runs_of(row["source"])[row["run"]]
    assert run.messages[row["index"]]["content"] == row["text"], f"{row['run']}: the quoted text is not message {row['index']}"
    return run


def confirmation_label(row: dict) -> bool:
    """The confirmation_before_write labeler on a run that is the turn, a user yes, then the write that followed."""
    tool, args = row["context"]["write"], row["context"]["arguments"]
    family = get_family("confirmation_before_write")
    check, label_args = family.portable_check({"write": tool})
    run = Run(
        run_id="labeled/0", source="labeled", task_id="labeled", reward=0.0, success=False,
        messages=[
            {"role": "assistant", "content": row["text"]},
            {"role": "user", "content": USER_YES},
            {"role": "assistant", "content": None},
            {"role": "tool", "content": "ok"},
        ],
        tool_calls=[ToolCall(id="c1", name=tool, arguments=args, result="ok", message_index=2)],
    )
    return family.label(RunView(run, {tool: "write"}), check, label_args) == "PRESENT"


def value_told_label(row: dict) -> bool:
    """The Communicated clause (every value of the row) on the real run cut right after the turn."""
    run = real_run(row)
    trace = ActionTrace.from_run(run.model_copy(update={
        "messages": run.messages[: row["index"] + 1],
        "tool_calls": [c for c in run.tool_calls if c.message_index < row["index"]],
    }))
    steps = [s for s in trace.steps[:-1] if s.kind != "say"] + trace.steps[-1:]
    assert steps[-1].kind == "say" and steps[-1].text == row["text"]
    clause = Communicated(id="told", values=row["context"]["values"])
    score, _ = clause.assess(trace.model_copy(update={"steps": steps}), {})
    return score == 1.0


def labeler_says(row: dict) -> bool:
    if row["labeler"] == "confirmation":
        real_run(row)
        return confirmation_label(row)
    if row["labeler"] == "refusal_reason":
        real_run(row)
        return refuses_with_reason(row["text"])
    return value_told_label(row)


def agreement_table(rows: list[dict]) -> dict[str, dict[str, tuple[int, int]]]:
    """labeler -> split ("all", "heldout") -> (agreeing rows, rows)."""
    out: dict[str, dict[str, list[int]]] = {k: defaultdict(lambda: [0, 0]) for k in LABELERS}
    for row in rows:
        agree = labeler_says(row) == row["label"]
        for split in ("all", row["split"]):
            cell = out[row["labeler"]][split]
            cell[0] += agree
            cell[1] += 1
    return {k: {s: tuple(v) for s, v in d.items()} for k, d in out.items()}


def format_table(table: dict[str, dict[str, tuple[int, int]]]) -> str:
    lines = ["| labeler | all rows | held-out rows |", "|---|---|---|"]
    for name, cells in table.items():
        shown = [f"{a / n:.2f} ({a}/{n})" if n else "-" for a, n in (cells.get(s, (0, 0)) for s in ("all", "heldout"))]
        lines.append(f"| {name} | {shown[0]} | {shown[1]} |")
    return "\n".join(lines)


def test_the_set_is_real_and_well_formed():
    rows = load_rows()
    assert len(rows) >= 90
    counts = defaultdict(int)
    for row in rows:
        assert row["labeler"] in LABELERS and isinstance(row["label"], bool) and row["why"].strip()
        assert row["split"] in ("dev", "heldout")
        real_run(row)
        counts[row["labeler"], row["label"]] += 1
    for name in LABELERS:  # positives and negatives for each labeler, from every kind of source
        assert counts[name, True] >= 8 and counts[name, False] >= 8, name
        sources = {r["source"].split("/")[-1] for r in rows if r["labeler"] == name}
        assert {"gpt-4o-airline.json", "gpt-4.1_telecom.json"} <= sources and len(sources) >= 5, (name, sources)
    heldout = sum(r["split"] == "heldout" for r in rows)
    assert heldout * 3 >= len(rows) - 3


def test_each_labeler_agrees_with_the_hand_labels():
    table = agreement_table(load_rows())
    print("\nLabeler agreement on hand-labelled real turns\n" + format_table(table))
    for name, cells in table.items():
        agree, n = cells["all"]
        assert agree / n >= MIN_AGREEMENT, f"{name}: {agree}/{n}"
