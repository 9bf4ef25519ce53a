"""The one reading of language (trace_envs/language): the views of its one vocabulary, its one sentence cut, and the
scripted user and the reward reading a confirmation the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_envs.checks.asking import asks
from trace_envs.language.confirmations import DEFAULT_ASK, asks_confirmation, confirmation_wording
from trace_envs.language.plain import normalize
from trace_envs.language.sentences import plain_sentences, sentences
from trace_envs.language.words import (
    LIGHT_VERBS,
    RECORD_NOUNS,
    VERB_SYNONYMS,
    action_words,
    is_handoff_tool,
    request_words,
    tool_verb,
    verb_synonyms,
)

ROOT = Path(__file__).resolve().parent.parent
COMMITTED_TOOLS = sorted({t["name"] for p in (ROOT / "generated").glob("*/spec.json")
                          for t in json.loads(p.read_text())["tools"]})
# Real targets' names (tau-bench, tau2 airline / retail / telecom, ToolSandbox, the planted domains) and each verb of
# the table on a two- and a three-word name.
TOOLS = sorted({
    *COMMITTED_TOOLS, "book_reservation", "send_certificate", "modify_pending_order_items", "exchange_delivered_order_items",
    "modify_user_address", "update_reservation_passengers", "refuel_data", "resume_line", "suspend_line", "pay_fine",
    "set_cellular_service_status", "escalate_to_specialist", "updateReservationBaggages",
    *(f"{verb}_{rest}" for verb in VERB_SYNONYMS for rest in ("items", "reservation_flights", "account")),
})


def test_the_committed_envs_give_tool_names_to_read() -> None:
    assert len(COMMITTED_TOOLS) >= 15 and "update_reservation_baggages" in COMMITTED_TOOLS


@pytest.mark.parametrize("tool", TOOLS)
def test_the_user_hears_its_request_named_by_every_word_the_reward_reads(tool: str) -> None:
    """A confirmation question the reward counts as naming the write also names the user's request for it."""
    assert set(action_words(tool)) <= set(request_words(tool))
    # and the words a labeler finds a user asking with are action words (a light verb's thing names it instead)
    assert set(verb_synonyms(tool)) <= set(action_words(tool)) or tool_verb(tool) in LIGHT_VERBS


def test_each_reach_of_a_verb_is_read_by_its_readers_only() -> None:
    for verb, syn in VERB_SYNONYMS.items():
        assert not (set(syn.words) & set(syn.in_questions)) and not (set(syn.words) & set(syn.to_the_user)), verb
        assert syn.words[0] == verb, verb
    tool = "update_reservation_baggages"
    # "add" names the action in a question, but a labeler looking in user text would find it in "address"
    assert "add" not in verb_synonyms(tool) and "add" in action_words(tool)
    # "edit" is the user's alone: the checks reading it would change what is mined
    assert "edit" not in action_words(tool) and "edit" in request_words(tool)
    assert verb_synonyms("cancel_reservation") == ("cancel",) and verb_synonyms("frobnicate_widget") == ("frobnicate",)
    assert verb_synonyms("updateReservationBaggages") == verb_synonyms("update_reservation_baggages")


def test_a_word_that_only_names_the_record_names_no_action() -> None:
    assert action_words("cancel_reservation") == ["cancel"] and request_words("cancel_reservation") == ("cancel",)
    assert "order" not in request_words("cancel_pending_order") and {"order", "details", "id"} <= RECORD_NOUNS
    assert not {"details", "detail"} & set(action_words("update_user_details") + list(request_words("update_user_details")))
    assert action_words("make_payment") == ["payment", "payments", "pay", "charge"]  # "make" names nothing


def test_hand_off_tools_by_their_names() -> None:
    assert all(is_handoff_tool(t) for t in ("transfer_to_human_agents", "escalate_to_specialist", "handOffCall"))
    assert not any(is_handoff_tool(t) for t in ("get_user_details", "cancel_reservation", "make_payment"))


def test_one_cut_two_views() -> None:
    text = "Please confirm that you\u2019d like to:\n1. Cancel QZ7Y2K\n- Keep the **refund** on your card. Shall I?"
    assert sentences(text) == ["Please confirm that you\u2019d like to:", "1. Cancel QZ7Y2K", "- Keep the **refund** on your card.",
                               "Shall I?"]
    assert plain_sentences(text) == ["please confirm that you'd like to:", "cancel qz7y2k", "keep the refund on your card.",
                                     "shall i?"]
    assert sentences("Pick one:\na. the aisle seat\nb. the window") == ["Pick one:", "a. the aisle seat", "b. the window"]
    assert plain_sentences("Pick one:\na. the aisle seat\nb) the window") == ["pick one:", "the aisle seat", "the window"]


def test_a_title_before_a_name_ends_no_sentence() -> None:
    """A confirmation naming "clinician: Dr. Castillo" keeps its action beside its question (randomizer seed 62: every
    careful agent's question was cut after "Dr." and read as naming nothing)."""
    text = ("Here is what I'll do: see a different doctor for appointment APT1 (clinician: Dr. Castillo). Could you "
            "please confirm if you'd like to proceed?")
    assert sentences(text) == ["Here is what I'll do: see a different doctor for appointment APT1 (clinician: Dr. "
                               "Castillo).", "Could you please confirm if you'd like to proceed?"]
    assert plain_sentences("Ask Mrs. Lee. Ms. Ito too. Prof. Ng is out.") == ["ask mrs. lee.", "ms. ito too.",
                                                                              "prof. ng is out."]
    assert sentences("I saw the doctor. Yes.") == ["I saw the doctor.", "Yes."]  # a word ending in "dr" is no title


@pytest.mark.parametrize("phrase", ["Shall I go on", "Is that correct", "Should I", "Do you want me to", "OK to",
                                    "Are you sure", "would you like me to", "Please confirm", "proceed"])
def test_the_default_ask_words_are_confirmation_wording_to_the_user(phrase: str) -> None:
    import re

    assert re.search(DEFAULT_ASK, phrase) and confirmation_wording(normalize(phrase))
    assert asks_confirmation(normalize(phrase + "?"))


def test_a_statement_of_what_the_agent_will_do_asks_no_confirmation() -> None:
    assert not asks_confirmation(normalize("I will proceed with the cancellation now."))
    assert asks_confirmation(normalize("Please confirm the cancellation of QZ7Y2K."))


def test_the_reward_reads_a_confirmation_question_with_the_checks_compiled_pattern() -> None:
    question = "I'm about to cancel reservation QZ7Y2K. Is that right? Reply yes to proceed."
    assert asks(question, DEFAULT_ASK, action_words("cancel_reservation"), ["QZ7Y2K"])
    assert not asks(question, DEFAULT_ASK, action_words("update_reservation_baggages"), ["QZ7Y2K"])
    assert not asks(question, DEFAULT_ASK, action_words("cancel_reservation"), ["ABC123"])


# ---- the scripted user and the reward on real confirmation questions ------------------------------------------------

LABELED = ROOT / "tests" / "data" / "labeled_turns.jsonl"


def _confirmation_rows() -> list[tuple[str, str, str, str]]:
    """(text, write tool, id argument, its value) for each hand-labelled confirmation turn that states the id of the
    record its write acts on."""
    rows = []
    for line in LABELED.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if not row or row["labeler"] != "confirmation":
            continue
        args = row["context"]["arguments"]
        key = next((k for k, v in args.items() if k.endswith("_id") and isinstance(v, str) and v in row["text"]), None)
        if key:
            rows.append((row["text"], row["context"]["write"], key, args[key]))
    return rows


def test_the_user_says_yes_exactly_to_what_the_reward_counts_as_asking_to_confirm() -> None:
    """On real agents' turns, the scripted user holding the request (the write on that id) says yes exactly when the
    reward's Confirmation clause counts the turn as a question naming the write and the id: what the user reads and
    what the reward pays for do not part."""
    from trace_envs.runtime.scenario import UserRequest
    from trace_envs.runtime.user import YES_REPLY, ScriptedUser

    rows = _confirmation_rows()
    assert len(rows) >= 15
    asked = parted = 0
    for text, tool, key, target in rows:
        reward = asks(text, DEFAULT_ASK, action_words(tool), [target])
        reply, _ = ScriptedUser(requests=[UserRequest.write(tool, key, target)]).reply(text)
        asked += reward
        parted += reward != (reply == YES_REPLY)
    assert asked >= 15 and parted == 0


def test_a_noun_first_names_verb_is_read_at_its_head() -> None:
    from trace_envs.language.words import action_words, tool_verb, tool_words

    assert tool_words("vehicles.upgrade") == ["upgrade", "vehicles"]
    assert tool_words("hold_cancel") == tool_words("cancelHold") == ["cancel", "hold"]
    assert tool_words("order_status") == ["order", "status"]  # no verb at either end: as written
    assert tool_verb("leave_request_submit") == "submit"
    assert "upgrade" in action_words("vehicles.upgrade")
    # a noun-first name whose head is a noun that is also a verb ("freeze fee", "transfer limit") acts by its last
    # word; so does a name ending in a verb the kind sets leave out, and a dotted name's action whatever verb it is
    assert tool_verb("freeze_fee_remove") == "remove"
    assert tool_verb("transfer_limit_raise") == "raise"
    assert tool_verb("appointment_confirm") == tool_verb("appointments.confirm") == "confirm"
    assert tool_verb("enrollments.audit") == "audit"
    # a verb-first name keeps its head: the last word is a noun, or a noun as often as a verb
    for name, verb in (("transfer_to_human_agents", "transfer"), ("send_payment_request", "send"),
                       ("update_reservation_flights", "update"), ("request_credit", "request"),
                       ("cancel_pending_order", "cancel")):
        assert tool_verb(name) == verb, name


def test_a_user_saying_no_to_a_confirmation_as_real_users_do():
    """The replies real users gave a confirmation question (tau-bench and tau2-bench), and replies that are no no."""
    from trace_envs.language.confirmations import declines

    for no in ("No, that's okay.", "No, that’s okay, thank you.", "Actually, I’ve changed my mind.",
               "Actually, can I have a bit more time to think about it?", "I changed my mind."):
        assert declines(no), no
    for other in ("Yes, please.", "Okay, go ahead.", "My client id is C0305946.", "Sure!", None):
        assert not declines(other), other


def test_might_state_never_rules_out_a_value_the_text_states() -> None:
    """`might_state` lets the claim detector skip turns that name no value: it must be a necessary condition of
    `text_mentions` (here over every value and turn of the real tau-bench airline runs, plus spellings and formats
    that differ from the value as written), and it must rule out most turns, or it saves nothing."""
    from trace_envs.language.values import might_state, text_mentions
    from trace_envs.trajectories.loaders import load_runs

    runs = load_runs([Path(__file__).parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"]).runs
    turns = [m["content"] for r in runs[:60] for m in r.messages
             if m.get("role") == "user" and isinstance(m.get("content"), str)]
    turns += ["It was canceled yesterday.", "Basic-Economy please", "on May 15, 2024", "I paid $1,234.50",
              "Section B is fine", "gold member", "It's CANCELLED", "Ünïcode gold", "status: in_transit"]
    values = ["cancelled", "basic_economy", "2024-05-15", "1234.5", 1234.5, "B", "gold", "in transit", True, None,
              "silver", "economy", "business", "pending", "delivered", "", "x", "travelling"]
    ruled_out = 0
    for text in turns:
        for value in values:
            maybe = might_state(value, text)
            if text_mentions(value, text):
                assert maybe, (value, text)
            ruled_out += not maybe
    assert ruled_out > len(turns) * 5
