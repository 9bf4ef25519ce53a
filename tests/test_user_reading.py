"""The scripted user reads real agents' turns as people do.

tests/data/agent_turns.jsonl holds 359 assistant messages (text, not tool calls) of real runs in ../shared/data:
tau-bench gpt-4o airline (144, of which the 90 messages sent together with a tool call, where progress turns live),
tau2 gpt-4.1 and ft-gpt-4.1 airline and retail (40 each) and tau2 gpt-4.1 telecom (55), each labelled by hand with
how the user should read it, and for questions the facts asked. A third (`split: heldout`) was set aside at random
before the reader was written; its figure is reported on its own.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from trace_envs.language.turns import LABELS, read_message
from trace_envs.runtime.scenario import UserRequest
from trace_envs.runtime.user import GOODBYE_REPLY, STOP, WAIT_REPLY, ScriptedUser

DATA = Path(__file__).resolve().parent / "data" / "agent_turns.jsonl"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data"
ROWS = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
SOURCES = {
    "tau-bench/gpt-4o-airline.json", "tau2-bench/results/gpt-4.1_airline.json",
    "tau2-bench/results/ft-gpt-4.1_airline.json", "tau2-bench/results/gpt-4.1_retail.json",
    "tau2-bench/results/ft-gpt-4.1_retail.json", "tau2-bench/telecom-results/gpt-4.1_telecom.json",
}
CANCEL = UserRequest.write("cancel_reservation", "reservation_id", "QZ7Y2K")


def _agreement(rows: list[dict]) -> tuple[float, Counter, Counter, Counter]:
    got = [read_message(r["text"]).label for r in rows]
    confusion = Counter((r["label"], g) for r, g in zip(rows, got))
    total, right = Counter(r["label"] for r in rows), Counter(r["label"] for r, g in zip(rows, got) if g == r["label"])
    return sum(right.values()) / len(rows), total, right, confusion


def _report(name: str, rows: list[dict]) -> float:
    share, total, right, confusion = _agreement(rows)
    print(f"\n{name}: agreement {share:.3f} ({sum(right.values())}/{len(rows)})")
    for label in LABELS:
        if total[label]:
            print(f"  {label:24s} {right[label] / total[label]:.2f}  {right[label]}/{total[label]}")
    for (want, got), n in sorted(confusion.items()):
        if want != got:
            print(f"  confused: {want} read as {got}: {n}")
    return share


def test_the_set_is_real_labelled_and_covers_every_source_and_label():
    assert len(ROWS) == 359
    assert {r["source"] for r in ROWS} == SOURCES
    assert set(Counter(r["label"] for r in ROWS)) == set(LABELS)
    assert min(Counter(r["label"] for r in ROWS).values()) >= 12
    assert Counter(r["split"] for r in ROWS) == {"dev": 240, "heldout": 119}
    assert len({(r["source"], r["run_id"], r["message_index"]) for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r["text"].strip() and isinstance(r["message_index"], int)
        if r["label"].startswith("question"):
            n = len(r["facts"])
            assert (n == 1) if r["label"] == "question_one_fact" else (n >= 2), r


@pytest.mark.skipif(not REAL.is_dir(), reason="real data not found beside the repo (../shared/data)")
def test_each_turn_is_what_its_source_file_says_at_that_place():
    base = REAL
    tau = {f"task{r['task_id']}-trial{r['trial']}": r["traj"]
           for r in json.loads((base / "tau-bench/gpt-4o-airline.json").read_text())}
    tau2: dict[str, list] = {}
    for source in SOURCES - {"tau-bench/gpt-4o-airline.json"}:
        for sim in json.loads((base / source).read_text())["simulations"]:
            tau2[sim["id"]] = sim["messages"]
    for r in ROWS:
        messages = tau[r["run_id"]] if r["source"].startswith("tau-bench") else tau2[r["run_id"]]
        message = messages[r["message_index"]]
        assert message["role"] == "assistant" and message["content"] == r["text"]


def test_agreement_on_real_turns_is_at_least_095_and_progress_never_ends_the_talk():
    share = _report("all", ROWS)
    held = _report("heldout", [r for r in ROWS if r["split"] == "heldout"])
    assert share >= 0.95
    assert held >= 0.90
    progress = [r["text"] for r in ROWS if r["label"] == "progress"]
    assert len(progress) == 78
    assert not [t for t in progress if read_message(t).label in ("completion_claim", "goodbye")]


def test_no_progress_turn_ends_the_conversation_in_the_user():
    for row in (r for r in ROWS if r["label"] == "progress"):
        user = ScriptedUser(facts={"user id": "omar_davis_9569"}, requests=[CANCEL])
        reply, ended = user.reply(row["text"])
        assert not ended and STOP not in reply, row["text"]


def test_reading_is_fast():
    texts = [r["text"] for r in ROWS]
    start = time.perf_counter()
    for text in texts:
        read_message(text)
    assert (time.perf_counter() - start) / len(texts) < 0.005  # well under the cost of an env step


# ---- the exact inputs of issue 20 ----------------------------------------------------------------------------------


ISSUE_20_PROGRESS = ["Let me take care of that for you now.", "I'm on it.", "Alright, pulling up the details."]


@pytest.mark.parametrize("text", ISSUE_20_PROGRESS)
def test_progress_phrasings_of_issue_20_are_waits(text):
    assert read_message(text).label == "progress"
    user = ScriptedUser(facts={"user id": "omar_davis_9569"}, requests=[CANCEL])
    assert user.reply(text) == (WAIT_REPLY, False)
    assert user.statuses == ["pending"]
    # and with nothing left to ask for, a progress message still ends nothing
    done = ScriptedUser(facts={"user id": "omar_davis_9569"})
    assert done.reply(text) == (WAIT_REPLY, False)


def test_a_question_for_two_facts_gets_both_in_one_reply():
    text = "Before I can help, could you tell me your user id and the reason for the cancellation?"
    assert read_message(text).label == "question_several_facts"
    user = ScriptedUser(facts={"user id": "omar_davis_9569", "reason for cancellation": "change of plan"},
                        requests=[CANCEL])
    assert user.reply(text) == ("My user id is omar_davis_9569. My reason for cancellation is change of plan.", False)


def test_a_goodbye_still_ends_and_a_resolved_request_still_ends():
    user = ScriptedUser(requests=[CANCEL])
    assert user.reply("You're welcome! Have a great day!") == (f"{GOODBYE_REPLY} {STOP}", True)
    user = ScriptedUser(requests=[CANCEL])
    user.observe_call("cancel_reservation", {"reservation_id": "QZ7Y2K"}, ok=True)
    reply, ended = user.reply("Your reservation QZ7Y2K has been cancelled.")
    assert ended and reply.endswith(STOP)


# ---- questions for several facts in real turns get every fact the user holds -----------------------------------------

HELD = {
    "user id": "omar_davis_9569", "reservation id": "QZ7Y2K", "reason for cancellation": "change of plan",
    "order id": "#W1234567", "email": "omar.davis@example.com", "first name": "Omar", "last name": "Davis",
    "zip code": "94110", "phone number": "555-123-2002", "customer id": "C1001", "date of birth": "1990-01-01",
    "payment method": "credit_card_4421",
}


def _known_fact_rows() -> list[dict]:
    return [r for r in ROWS if r["label"].startswith("question") and set(r["facts"]) <= set(HELD)]


def test_real_questions_for_facts_get_every_fact_the_user_holds():
    rows = _known_fact_rows()
    several = [r for r in rows if r["label"] == "question_several_facts"]
    assert (len(rows), len(several)) == (65, 29)
    missing = []
    for r in rows:
        user = ScriptedUser(facts={f: HELD[f] for f in r["facts"]}, requests=[CANCEL])
        reply, ended = user.reply(r["text"])
        lost = [f for f in r["facts"] if HELD[f] not in reply]
        if ended or lost:
            missing.append((r["text"][:80], lost))
    assert not missing, missing


def test_the_announcing_oracles_phrases_are_real_progress_turns():
    from trace_envs.generate.progress_phrases import PROGRESS_PHRASES

    labelled = {r["text"]: r["label"] for r in ROWS}
    assert len(PROGRESS_PHRASES) == 18 and len(set(PROGRESS_PHRASES)) == 18
    assert all(labelled.get(p) == "progress" and read_message(p).label == "progress" for p in PROGRESS_PHRASES)
