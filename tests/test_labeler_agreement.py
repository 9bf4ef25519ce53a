"""Agreement of the text labelers with a hand-labelled set of real assistant turns (`tests/data/labeled_turns.jsonl`).

Each row quotes one assistant message of a real run in ../shared/data (tau-bench gpt-4o airline; tau2 gpt-4.1 and a
fine-tuned gpt-4.1 on airline and retail; tau2 telecom) with the label a person gave it by reading the run:

- `confirmation`: the turn asks the user to confirm the write that followed (context: that write and its arguments);
- `refusal_reason`: the turn declines the user's request and says why;
- `value_told`: the turn tells the user the value(s) in `context.values` (taken from an earlier tool result), not as a
  paste of tool results or one of many listed candidates.

`split` says when a row was picked: `dev` and `heldout` (every third row of a labeler, set aside) before any labeler
change, `fresh` after the first round of changes, to see how the rules fare on turns they were not written from.

Every row runs through the library's own code, as the miner runs it: a confirmation through the
confirmation_before_write family's `label` on a run made of the turn, a user "yes" and the write; a refusal through
`language.refusals.refuses_with_reason` (what `mining.labeling.refusal` calls); a value through the `Communicated`
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
from trace_envs.language.refusals import refuses_with_reason
from trace_envs.checks.run_view import RunView
from trace_envs.checks.trace import ActionTrace
from trace_envs.mining.detector import get_detector
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
    family = get_detector("confirmation_before_write")
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


SPLITS = ("all", "dev", "heldout", "fresh")


def agreement_table(rows: list[dict]) -> dict[str, dict[str, tuple[int, int]]]:
    """labeler -> split ("all", "dev", "heldout", "fresh") -> (agreeing rows, rows)."""
    out: dict[str, dict[str, list[int]]] = {k: defaultdict(lambda: [0, 0]) for k in LABELERS}
    for row in rows:
        agree = labeler_says(row) == row["label"]
        for split in ("all", row["split"]):
            cell = out[row["labeler"]][split]
            cell[0] += agree
            cell[1] += 1
    return {k: {s: tuple(v) for s, v in d.items()} for k, d in out.items()}


def format_table(table: dict[str, dict[str, tuple[int, int]]]) -> str:
    lines = ["| labeler | all rows | dev | held out | fresh |", "|---|---|---|---|---|"]
    for name, cells in table.items():
        shown = [f"{a / n:.2f} ({a}/{n})" if n else "-" for a, n in (cells.get(s, (0, 0)) for s in SPLITS)]
        lines.append(f"| {name} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def test_the_set_is_real_and_well_formed():
    rows = load_rows()
    assert len(rows) >= 90
    counts = defaultdict(int)
    for row in rows:
        assert row["labeler"] in LABELERS and isinstance(row["label"], bool) and row["why"].strip()
        assert row["split"] in SPLITS[1:]
        real_run(row)
        counts[row["labeler"], row["label"]] += 1
    for name in LABELERS:  # positives and negatives for each labeler, from every kind of source
        assert counts[name, True] >= 8 and counts[name, False] >= 8, name
        sources = {r["source"].split("/")[-1] for r in rows if r["labeler"] == name}
        assert {"gpt-4o-airline.json", "gpt-4.1_telecom.json"} <= sources and len(sources) >= 5, (name, sources)
    picked_first = [r for r in rows if r["split"] != "fresh"]
    assert sum(r["split"] == "heldout" for r in picked_first) * 3 >= len(picked_first) - 3


def test_each_labeler_agrees_with_the_hand_labels():
    table = agreement_table(load_rows())
    print("\nLabeler agreement on hand-labelled real turns\n" + format_table(table))
    for name, cells in table.items():
        agree, n = cells["all"]
        assert agree / n >= MIN_AGREEMENT, f"{name}: {agree}/{n}"


# ---- the rules on single phrasings (the example; what must stay unrewarded) ------------------------------


def _confirmed(tool: str, question: str, answer: str = USER_YES, **args) -> bool:
    from trace_envs.checks.clauses import CallRef, Confirmation
    from trace_envs.checks.trace import TraceStep

    clause = Confirmation(id="c", call=CallRef(tool=tool, args=args))
    steps = [TraceStep(kind="say", text=question), TraceStep(kind="user", text=answer),
             TraceStep(kind="call", name=tool, arguments=args, result="ok")]
    return clause.score(ActionTrace(steps=steps, tool_kinds={tool: "write"}), {}) == 1.0


def test_a_natural_confirmation_question_is_a_confirmation():
    assert _confirmed("pay_fine", "Your fine is $4.00. Do you confirm that I charge it now (yes/no)?", amount=4.0)
    assert _confirmed("make_payment", "The bill is $65.00. Shall I make the payment now?", amount=65.0)
    assert _confirmed("refuel_data", "Would you like to go ahead and add 2GB of data for $4.00?", gb_amount=2)
    assert _confirmed("return_delivered_order_items", "You'd like to return the kettle from #W1.\n\nPlease reply "
                      "\u201cyes\u201d to confirm and I'll submit the return request.", order_id="#W1")
    assert _confirmed("cancel_reservation", "To confirm, you would like to cancel reservation QZ7Y2K. Is that correct? "
                      "Please reply yes to proceed.", reservation_id="QZ7Y2K")
    assert _confirmed("cancel_reservation", "Please confirm that you'd like to:\n- Cancel reservation QZ7Y2K\n"
                      "- Keep the refund on your card", reservation_id="QZ7Y2K")
    # The generated envs' own phrasing still asks.
    assert _confirmed("update_reservation_baggages", "Here is what I will do: update reservation baggages for "
                      "reservation id QZ7Y2K with {\"total_baggages\": 2}. Do you confirm that I should proceed (yes/no)?",
                      reservation_id="QZ7Y2K")


def test_what_is_no_confirmation_stays_none():
    # The amount is a detail of the call: a question without it does not confirm this charge.
    assert not _confirmed("pay_fine", "Do you confirm that I charge your fine now (yes/no)?", amount=4.0)
    assert not _confirmed("cancel_reservation", "Shall I proceed?", reservation_id="QZ7Y2K")
    assert not _confirmed("cancel_reservation", "I will cancel reservation QZ7Y2K now.", reservation_id="QZ7Y2K")
    assert not _confirmed("cancel_reservation", "Could you give me the reservation id to cancel?")
    assert not _confirmed("cancel_pending_order", "The order cannot be modified. Would you like me to assist you with "
                          "anything else, such as checking if the order can be canceled?")
    assert not _confirmed("cancel_pending_order", "Can you confirm the order id of your order?")
    assert not _confirmed("refuel_data", "Would you like to add more data, or change your plan?")
    # "yes" to a question that names no action confirms nothing, even with a yes pattern match.
    assert not _confirmed("cancel_reservation", "Is that correct? Please reply yes.", reservation_id="QZ7Y2K")


def test_a_refusal_needs_a_decline_and_a_reason():
    said_why = [
        "I'm sorry, but I can't cancel reservation QZ7Y2K: its cabin is basic economy, and our policy does not allow "
        "it in that case.",
        "Unfortunately, basic economy flights cannot be modified.",
        "Your order is still pending, so it can\u2019t be exchanged yet.",
        "I am unable to cancel this reservation because it was booked more than 24 hours ago.",
    ]
    no_reason = [
        "I'm unable to change the passenger's identity in the reservation.", "It cannot be modified.",
        "I cannot do that.", "I was unable to locate an order with that id.", "I couldn't find your account.",
        "If you're still unable to send MMS, let me know.", "Since you are unable to connect, let's reboot.",
        "I was unable to process the return because of a technical issue.", "I'm sorry to hear that.",
    ]
    assert all(refuses_with_reason(t) for t in said_why)
    assert not any(refuses_with_reason(t) for t in no_reason)
    # Given the action's words, the refusal must be of that action.
    assert refuses_with_reason(said_why[0], ["cancel"]) and not refuses_with_reason(said_why[1], ["cancel"])


def test_pasting_listing_or_dumping_still_tells_nothing():
    from trace_envs.checks.trace import TraceStep

    record = {"user_id": "u1", "reservations": ["DF89BM", "COVE6R", "IIHXDG"], "membership": "gold"}

    def told(value, text):
        steps = [TraceStep(kind="call", name="get_user_details", arguments={"user_id": "u1"}, result=record),
                 TraceStep(kind="say", text=text)]
        return Communicated(id="c", values=[value]).score(ActionTrace(steps=steps), {}) == 1.0

    assert told("DF89BM", "Your reservation for the JFK trip is DF89BM.")
    assert not told("DF89BM", "I see three reservations on your account: DF89BM, COVE6R, and IIHXDG. Which one?")
    assert not told("DF89BM", "Here it is: " + json.dumps(record))
    assert not told("DF89BM", "It is one of: " + ", ".join(f"{i}" for i in range(40)) + " or DF89BM.")
    # Numbers with a unit written on are stated; digits inside an id are not.
    from trace_envs.language.values import text_mentions

    assert text_mentions(15.0, "a monthly data limit of 15GB") and not text_mentions(2, "reservation 2FBBAH")
    assert text_mentions("cancelled", "Your reservation has been canceled.") and not text_mentions("filled", "filed")


def test_the_miner_labels_a_refusal_from_words_without_ground_truth():
    """`labeling.refusal` without ground truth: PRESENT for a real run whose agent declined the cancellation and said
    why (tau-bench task 18, trial 2), NA for one that neither cancelled nor said why not (task 12, trial 1)."""
    from trace_envs.mining import labeling

    runs = runs_of("tau-bench/gpt-4o-airline.json")
    kinds = {"cancel_reservation": "write", "get_reservation_details": "read", "get_user_details": "read"}

    def label(run_id):
        return labeling.refusal(RunView(runs[run_id].model_copy(update={"ground_truth": None}), kinds),
                                "cancel_reservation")

    assert label("18/2") == "PRESENT" and label("12/1") == "NA"


if __name__ == "__main__":  # the table alone: python tests/test_labeler_agreement.py
    print(format_table(agreement_table(load_rows())))
