"""Checks that cannot be satisfied by accident: each test replays the episode that exposed a defect (issue 10).

Errored calls count as nothing, an extra write zeroes a check through a penalty, pasting records or listing every
number tells the user nothing, natural forms of a value count, a confirmation question must name the action and its
details, spec patterns run on RE2, and every clause says why it scored what it did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from trace_envs.checks import (
    ActionTrace,
    AllCompleted,
    Asked,
    CallMade,
    CallRef,
    Check,
    Communicated,
    Confirmation,
    FinalState,
    NoCall,
    Order,
    TraceStep,
    text_mentions,
)
from trace_envs.language.confirmations import DEFAULT_ASK, DEFAULT_YES
from trace_envs.checks.matching import pattern_problem
from trace_envs.language.words import action_words
from trace_envs.spec.io import SpecError, parse_specs

ROOT = Path(__file__).resolve().parents[1]
KINDS = {
    "get_reservation_details": "read",
    "get_user_details": "read",
    "cancel_reservation": "write",
    "update_reservation_flights": "write",
    "update_reservation_baggages": "write",
}
RECORD = {
    "reservation_id": "QZ7Y2K",
    "user_id": "mia_li_3668",
    "origin": "JFK",
    "destination": "LAX",
    "cabin": "basic_economy",
    "created_at": "2024-05-15T08:28:51",
    "flights": [
        {"flight_number": "HAT001", "date": "2024-05-20", "price": 612},
        {"flight_number": "HAT002", "date": "2024-05-27", "price": 622},
    ],
    "payment_history": [{"payment_id": "credit_card_4421", "amount": 1234}],
}


def ok(name, result=None, **args):
    return TraceStep(kind="call", name=name, arguments=args, result=result if result is not None else {"ok": True})


def failed(name, message, **args):
    return TraceStep(kind="call", name=name, arguments=args, result={"error": message}, error=True)


def say(text):
    return TraceStep(kind="say", text=text)


def user(text):
    return TraceStep(kind="user", text=text)


def trace(*steps):
    return ActionTrace(steps=list(steps), tool_kinds=KINDS)


def cancel(rid):
    return CallRef(tool="cancel_reservation", args={"reservation_id": rid})


# ---- errored calls ----------------------------------------------------------------------------------------------


def test_three_errored_cancels_complete_nothing():
    """`airline_cancel_every_requested_reservation` paid 1.0 for three calls that each returned an error."""
    error = "unknown argument(s) for cancel_reservation: foo"
    t = trace(
        user("Please cancel my reservations AB12CD, EF34GH and IJ56KL."),
        *[failed("cancel_reservation", error, reservation_id=r, foo="bar") for r in ("AB12CD", "EF34GH", "IJ56KL")],
        say("All three reservations are cancelled."),
    )
    check = Check(clauses=[
        CallMade(id="cancelled_any", call=CallRef(tool="cancel_reservation")),
        AllCompleted(id="all_requests", calls=[cancel(r) for r in ("AB12CD", "EF34GH", "IJ56KL")]),
    ])
    result = check.evaluate(t)
    assert result.score == 0.0 and result.breakdown == {"cancelled_any": 0.0, "all_requests": 0.0}
    assert result.reasons["cancelled_any"] == (
        "not met: no successful call of cancel_reservation (3 matching calls returned an error)"
    )
    assert result.reasons["all_requests"].startswith("not met: none of the 3 calls made; missing cancel_reservation(")
    # The same calls succeeding complete the request.
    done = trace(*[ok("cancel_reservation", reservation_id=r) for r in ("AB12CD", "EF34GH", "IJ56KL")])
    assert check.evaluate(done).score == 1.0


def test_errored_calls_satisfy_no_positive_clause_but_still_break_a_ban():
    read = failed("get_reservation_details", "reservation not found", reservation_id="QZ7Y2K")
    write = ok("cancel_reservation", reservation_id="QZ7Y2K")
    order = Order(id="o", first=CallRef(tool="get_reservation_details"), then=CallRef(tool="cancel_reservation"),
                  join=["reservation_id"])
    assert order.score(trace(read, write), {}) == 0.0
    assert order.score(trace(ok("get_reservation_details", reservation_id="QZ7Y2K"), write), {}) == 1.0
    # An errored `then` is not the order being exercised.
    assert not order.exercised(trace(failed("cancel_reservation", "x", reservation_id="QZ7Y2K")), {})
    # Trying a forbidden write is the behaviour a ban penalises, whatever the tool answered.
    ban = NoCall(id="n", call=CallRef(kind="write"))
    assert ban.score(trace(failed("cancel_reservation", "not allowed", reservation_id="QZ7Y2K")), {}) == 0.0
    # An errored anchor does not open the window of a "told after reading" clause.
    told = Communicated(id="c", values=["basic_economy"], after=CallRef(tool="get_reservation_details"))
    assert told.score(trace(read, say("Your cabin is basic economy, I am afraid.")), {}) == 0.0
    assert told.assess(trace(read), {})[1] == (
        "not met: no successful call of get_reservation_details (1 matching call returned an error)"
    )


def test_an_errored_write_is_neither_confirmed_nor_unconfirmed():
    clause = Confirmation(id="c", call=cancel({"$var": "target"}))
    t = trace(
        say("I'm about to cancel reservation QZ7Y2K. Do you confirm (yes/no)?"),
        user("Yes"),
        failed("cancel_reservation", "unknown argument(s) for cancel_reservation: foo", reservation_id="QZ7Y2K", foo=1),
        ok("cancel_reservation", reservation_id="QZ7Y2K"),
    )
    assert clause.score(t, {"target": "QZ7Y2K"}) == 1.0


# ---- extra writes -----------------------------------------------------------------------------------------------


def test_an_extra_write_on_another_tool_zeroes_the_check():
    """Cancelling both reservations on top of the wanted flight update was not penalised: `no_other_write` looked at
    one tool only."""
    wanted = CallRef(tool="update_reservation_flights", args={"reservation_id": {"$var": "target"}})
    check = Check(clauses=[
        CallMade(id="read_target", call=CallRef(tool="get_reservation_details", args={"reservation_id": {"$var": "target"}})),
        CallMade(id="updated", weight=2, call=wanted),
        NoCall(id="no_other_write", penalty=True, call=CallRef(kind="write"), unless=[wanted]),
    ])
    b = {"target": "QZ7Y2K"}
    good = [
        ok("get_reservation_details", RECORD, reservation_id="QZ7Y2K"),
        ok("update_reservation_flights", reservation_id="QZ7Y2K", cabin="economy", flights=[], payment_id="credit_card_4421"),
        say("Your flights on reservation QZ7Y2K are updated."),
    ]
    assert check.evaluate(trace(*good), b).score == 1.0
    extra = good[:2] + [ok("cancel_reservation", reservation_id="QZ7Y2K"), ok("cancel_reservation", reservation_id="M05KNL"),
                        good[2]]
    result = check.evaluate(trace(*extra), b)
    assert result.score == 0.0 and not result.passed
    assert result.breakdown == {"read_target": 1.0, "updated": 1.0, "no_other_write": 0.0}
    assert result.reasons["no_other_write"] == "penalty: violated by cancel_reservation(reservation_id=QZ7Y2K) at step 3"
    assert result.reasons["updated"] == "met"


def test_penalty_semantics():
    ban = NoCall(id="no_cancel", penalty=True, call=CallRef(tool="cancel_reservation"))
    with pytest.raises(ValidationError, match="at least one clause that is not a penalty"):
        Check(clauses=[ban])
    with pytest.raises(ValidationError, match="must not all be zero"):
        Check(clauses=[CallMade(id="read", weight=0, call=CallRef(tool="get_reservation_details")), ban])
    read = CallMade(id="read", call=CallRef(tool="get_reservation_details"))
    # A penalty may gate another clause (it must be 1.0) and carries no weight of its own.
    told = Communicated(id="told", requires=["no_cancel"], values=["basic_economy"])
    check = Check(clauses=[read, ban, told])
    sentence = say("Your reservation is basic economy, so it cannot be changed.")
    r = check.evaluate(trace(ok("get_reservation_details", RECORD), sentence))
    assert r.score == 1.0 and r.breakdown == {"read": 1.0, "no_cancel": 1.0, "told": 1.0}
    assert r.reasons["no_cancel"] == "met"
    r = check.evaluate(trace(ok("get_reservation_details", RECORD), ok("cancel_reservation", reservation_id="X"), sentence))
    assert r.score == 0.0 and r.breakdown["told"] == 0.0
    assert r.reasons["told"] == "gate not met: requires no_cancel (0.0)"
    # A penalty switched off by `when` does not apply; one whose own gate is unmet zeroes the check.
    switched = Check(clauses=[read, ban.model_copy(update={"when": "strict"})])
    assert switched.evaluate(trace(ok("get_reservation_details"), ok("cancel_reservation")), {"strict": False}).score == 1.0
    assert switched.evaluate(trace(ok("get_reservation_details"), ok("cancel_reservation")), {"strict": True}).score == 0.0
    gated = Check(clauses=[read, ban.model_copy(update={"requires": ["read"]})])
    assert gated.evaluate(trace(say("hello"))).reasons["no_cancel"] == "gate not met: requires read (0.0)"
    # Partial credit is scaled, not replaced: half the weighted clauses met and no violation -> 0.5.
    two = Check(clauses=[read, CallMade(id="other", call=CallRef(tool="get_user_details")), ban])
    assert two.evaluate(trace(ok("get_reservation_details"))).score == 0.5
    # The penalty survives the JSON round trip; the fields it added stay out of dumps of clauses that do not use them.
    assert Check.model_validate_json(check.model_dump_json()) == check
    assert "penalty" not in read.model_dump() and "unless" not in NoCall(id="n", call=CallRef(tool="x")).model_dump()


# ---- told the user ----------------------------------------------------------------------------------------------


def test_pasting_the_record_explains_nothing():
    """`airline_refuse_basic_economy_flight_change` paid 1.00 for reading the records and pasting them back."""
    explained = Communicated(id="explained", values=["basic_economy"],
                             after=CallRef(tool="get_reservation_details", args={"reservation_id": {"$var": "target"}}))
    b = {"target": "QZ7Y2K"}
    read = ok("get_reservation_details", RECORD, reservation_id="QZ7Y2K")
    pasted = say("Here is your reservation, so you can see why: " + json.dumps(RECORD))
    r = Check(clauses=[explained]).evaluate(trace(read, pasted), b)
    assert r.score == 0.0 and r.reasons["explained"] == "not met: message 1 pastes a tool result (JSON)"
    # A tool result given as text (as tau-bench returns them), repeated verbatim without JSON punctuation.
    text = "Reservation QZ7Y2K is a basic_economy booking from JFK to LAX on HAT001 and HAT002, paid by credit_card_4421."
    read_text = ok("get_reservation_details", text, reservation_id="QZ7Y2K")
    echoed = say("I looked this up for you. " + text)
    assert explained.assess(trace(read_text, echoed), b) == (
        0.0, "not met: message 1 pastes a tool result (60+ characters verbatim)")
    either = Communicated(id="explained", values=["basic_economy", "economy"], mode="any")
    assert either.assess(trace(read, pasted), b) == (0.0, "not met: message 1 pastes a tool result (JSON)")
    # Stating it in a sentence is what pays; a message that pasted does not spoil a later good one.
    told = say("Your reservation is in basic economy, and basic economy flights cannot be changed.")
    assert explained.score(trace(read, pasted, told), b) == 1.0
    assert explained.score(trace(read_text, told), b) == 1.0
    # Said before the record was read: the answer was a guess.
    assert explained.assess(trace(told, read), b) == (
        0.0, "not met: the value 'basic_economy' was not stated in a sentence after "
        "get_reservation_details(reservation_id=QZ7Y2K)")


def test_listing_every_number_answers_nothing():
    """`airline_total_paid_over_reservations` paid 1.00 to a reply listing every integer up to 30000."""
    answer = Communicated(id="correct_answer", values=[{"$var": "total"}])
    b = {"total": 1234}
    read = ok("get_reservation_details", RECORD, reservation_id="QZ7Y2K")
    dump = say("The total you paid is one of these amounts: " + ", ".join(str(i) for i in range(30001)) + ".")
    r = Check(clauses=[answer]).evaluate(trace(read, dump), b)
    assert r.score == 0.0 and r.reasons["correct_answer"] == "not met: message 1 states more than 12 distinct numbers"
    # Listing every value of the record (ids, places, flights, prices) is a dump too, even without many numbers.
    values = "QZ7Y2K, mia_li_3668, JFK, LAX, basic economy, HAT001, HAT002, 612, 622, credit_card_4421, 1234"
    r = answer.assess(trace(read, say(f"The total you paid is one of these values: {values}.")), b)
    assert r == (0.0, "not met: message 1 lists 11 values from tool results (at most 4)")
    # Values the user said first are not candidates the agent is listing.
    said = user("My reservation QZ7Y2K is under mia_li_3668, from JFK to LAX on HAT001 and HAT002.")
    ok_list = say("For QZ7Y2K (mia_li_3668, JFK to LAX, flights HAT001 and HAT002) you paid $1,234 in total.")
    assert answer.score(trace(said, read, ok_list), b) == 1.0
    assert answer.score(trace(read, say("The total you paid over your reservations is $1,234.00.")), b) == 1.0


def test_natural_forms_of_a_value_are_communicated():
    """`explained` wanted the raw token `basic_economy`: "basic economy" got 0.8."""
    def told(value, text):
        return Communicated(id="c", values=[value]).score(trace(say(text)), {})

    assert told("basic_economy", "Your ticket is basic economy, which cannot be modified.") == 1.0
    assert told("basic_economy", "Your ticket is Basic-Economy, which cannot be modified.") == 1.0
    assert told(1234.5, "The total you paid is $1,234.50 for both trips.") == 1.0
    assert told("2024-05-15", "Your reservation was made on May 15, 2024 by you.") == 1.0
    assert told("2024-05-15T08:28:51", "You booked it on May 15th, 2024, more than a day ago.") == 1.0
    # A value with fewer than three other words around it is no sentence.
    assert told("basic_economy", "basic economy") == 0.0
    assert told(1234.5, "Total: $1,234.50") == 0.0
    for text in ("2024-05-15", "May 15, 2024", "May 15th, 2024", "15 May 2024", "05/15/2024", "2024/05/15", "May 15",
                 "15 May", "Wednesday, 15th of May", "on Wed May 15.", "2024-05-15T08:28:51"):
        assert text_mentions("2024-05-15", text), text
    for text in ("May 15, 2023", "May 150", "15 Mayfair", "2024-05-16", "05/15/2023", "115 May"):
        assert not text_mentions("2024-05-15", text), text
    assert text_mentions("2024-09-03", "on Sept. 3, 2024") and text_mentions("2024-09-03", "3 Sep")
    for text in ("$1,234.50", "1234.5", "1,234.5 dollars", "USD 1234.50"):
        assert text_mentions(1234.5, text), text
    assert text_mentions(1234, "1,234") and not text_mentions(7, "JG7FMM") and not text_mentions(1234.5, "1234.6")
    assert text_mentions("basic economy", "BASIC_ECONOMY") and not text_mentions("economy", "economyplus")
    assert text_mentions(["HAT001", "HAT002"], "HAT001 then HAT002") and not text_mentions(["HAT001", "HAT003"], "HAT001")
    assert not text_mentions(None, "None") and not text_mentions("", "anything")


# ---- confirmation -----------------------------------------------------------------------------------------------


CANCEL_TARGET = cancel({"$var": "target"})
B = {"target": "QZ7Y2K"}


def test_a_confirmation_question_must_name_the_action_and_its_details():
    """Any reply containing "proceed" counted as asking for confirmation, without the details."""
    clause = Confirmation(id="confirmed", call=CANCEL_TARGET)
    write = ok("cancel_reservation", reservation_id="QZ7Y2K")
    assert clause.score(trace(say("Shall I proceed?"), user("Yes"), write), B) == 0.0
    assert clause.score(trace(say("I will proceed now."), user("Yes"), write), B) == 0.0
    named = say("I'm about to cancel reservation QZ7Y2K. Do you confirm (yes/no)?")
    r = Check(clauses=[clause]).evaluate(trace(named, user("Yes"), write), B)
    assert r.score == 1.0 and r.reasons["confirmed"] == "met"
    # The wrong reservation, or no action word, is not the question.
    assert clause.score(trace(say("I'm about to cancel reservation M05KNL. Do you confirm?"), user("Yes"), write), B) == 0.0
    assert clause.score(trace(say("Reservation QZ7Y2K: do you confirm?"), user("Yes"), write), B) == 0.0
    assert clause.assess(trace(say("Shall I proceed?"), user("Yes"), write), B) == (
        0.0, "not met: cancel_reservation(reservation_id=QZ7Y2K) at step 3 came without a confirmation question naming "
        "the action (cancel) and 'QZ7Y2K' before it")
    # No yes, or a new question after the yes: not confirmed.
    assert clause.score(trace(named, user("Hmm, let me think."), write), B) == 0.0
    again = say("Before I cancel reservation QZ7Y2K: shall I also refund it to the card?")
    assert clause.assess(trace(named, user("Yes"), again, write), B) == (
        0.0, "not met: cancel_reservation(reservation_id=QZ7Y2K) at step 4 came without the user agreeing after the "
        "confirmation question")
    # Explicit action words and details replace the defaults.
    custom = Confirmation(id="c", call=CANCEL_TARGET, action_words=["void"], details=[{"$var": "target"}, "JFK"])
    assert custom.score(trace(say("Shall I void QZ7Y2K, the JFK trip?"), user("yes"), write), B) == 1.0
    assert custom.score(trace(named, user("yes"), write), B) == 0.0


def test_default_action_words_come_from_the_tool_name():
    assert action_words("cancel_reservation") == ["cancel"]
    assert action_words("update_reservation_baggages") == ["update", "change", "modify", "add", "baggages", "baggage"]
    assert "flight" in action_words("update_reservation_flights")
    clause = Confirmation(id="c", call=CallRef(tool="update_reservation_baggages", args={"reservation_id": "QZ7Y2K"}))
    write = ok("update_reservation_baggages", reservation_id="QZ7Y2K", total_baggages=2)
    for question in ("Shall I add 2 bags to reservation QZ7Y2K?", "Do you want me to change the baggage on QZ7Y2K?",
                     "I'm updating reservation QZ7Y2K to 2 bags: do you confirm?"):
        assert clause.score(trace(say(question), user("Yes, go ahead."), write), {}) == 1.0, question


def test_asked_pays_for_the_question_when_the_user_declines():
    asked = Asked(id="asked", call=CANCEL_TARGET,
                  after=CallRef(tool="get_reservation_details", args={"reservation_id": {"$var": "target"}}))
    read = ok("get_reservation_details", RECORD, reservation_id="QZ7Y2K")
    question = say("I'm about to cancel reservation QZ7Y2K. Do you confirm (yes/no)?")
    assert asked.score(trace(read, question, user("No, keep it.")), B) == 1.0
    assert asked.score(trace(read, say("Shall I proceed?"), user("No.")), B) == 0.0
    assert asked.assess(trace(question, read), B) == (
        0.0, "not met: no confirmation question naming the action (cancel) and 'QZ7Y2K' was asked after "
        "get_reservation_details(reservation_id=QZ7Y2K)")
    assert asked.assess(trace(question), B)[1] == (
        "not met: no successful call of get_reservation_details(reservation_id=QZ7Y2K)")
    # Without `after`, and by kind: the words of every write tool the trace knows count.
    by_kind = Asked(id="a", call=CallRef(kind="write"))
    assert by_kind.score(trace(say("Do you want me to change your flights?")), {}) == 1.0
    assert by_kind.score(trace(say("Do you want me to look at your profile?")), {}) == 0.0


# ---- linear-time patterns ---------------------------------------------------------------------------------------


def test_spec_patterns_run_in_linear_time():
    """A backtracking engine takes exponential time on `(a+)+$` against "aaa...ab"; RE2 returns at once."""
    hostile = "a" * 50_000 + "b"
    made = CallMade(id="m", call=CallRef(tool="cancel_reservation", args={"reservation_id": {"$regex": "(a+)+$"}}))
    assert made.score(trace(ok("cancel_reservation", reservation_id=hostile)), {}) == 0.0
    assert made.score(trace(ok("cancel_reservation", reservation_id="a" * 50_000)), {}) == 1.0
    confirm = Confirmation(id="c", call=CallRef(tool="cancel_reservation"), ask_pattern="(a+)+$", action_words=[])
    assert confirm.score(trace(say("?" + hostile), user("yes"), ok("cancel_reservation")), {}) == 0.0


def test_patterns_re2_rejects_fail_where_the_check_is_built():
    assert pattern_problem(DEFAULT_ASK) is None and pattern_problem(DEFAULT_YES) is None
    with pytest.raises(ValidationError, match="ask_pattern: pattern '\\(\\?<!not \\)confirm' is not supported"):
        Confirmation(id="c", call=CallRef(tool="x"), ask_pattern="(?<!not )confirm")
    with pytest.raises(ValidationError, match="yes_pattern"):
        Confirmation(id="c", call=CallRef(tool="x"), yes_pattern=r"(yes)\1")
    with pytest.raises(ValidationError, match="args.note: \\$regex pattern"):
        CallRef(tool="x", args={"note": {"$not": {"$regex": "(?<=a)b"}}})
    with pytest.raises(ValidationError, match="value.status: \\$regex"):
        FinalState(id="f", path="r", value={"status": {"$regex": "(?=x)"}})
    # In a spec file: one error line naming the clause's field.
    spec = json.loads((ROOT / "examples" / "specs" / "airline_confirm_before_baggage_update.json").read_text())
    at, confirmed = next((i, c) for i, c in enumerate(spec["check"]["clauses"]) if c["type"] == "confirmation")
    confirmed["ask_pattern"] = "(?<!not )confirm"
    with pytest.raises(SpecError) as err:
        parse_specs(spec, "spec.json")
    assert len(err.value.errors) == 1 and "ask_pattern" in err.value.errors[0]
    assert err.value.errors[0].startswith(f".check.clauses[{at}].ask_pattern:")


# ---- reasons ----------------------------------------------------------------------------------------------------


def test_reasons_cover_every_clause():
    check = Check(clauses=[
        CallMade(id="read_target", call=CallRef(tool="get_reservation_details", args={"reservation_id": {"$var": "target"}})),
        CallMade(id="cancelled", when="allowed", requires=["read_target"], call=CANCEL_TARGET),
        NoCall(id="no_write", when="!allowed", call=CallRef(kind="write")),
        AllCompleted(id="all", calls=[cancel("A1"), cancel("B2"), cancel("C3")]),
        FinalState(id="state", path="reservations.$target.status", value="cancelled"),
    ])
    t = trace(say("Let me check."), ok("cancel_reservation", reservation_id="A1"), ok("cancel_reservation", reservation_id="B2"))
    t.final_state = {"reservations": {"QZ7Y2K": {"status": "active"}}}
    r = check.evaluate(t, {"target": "QZ7Y2K", "allowed": True})
    assert r.reasons == {
        "read_target": "not met: no successful call of get_reservation_details(reservation_id=QZ7Y2K)",
        "cancelled": "gate not met: requires read_target (0.0)",
        "no_write": "off: active only when allowed is false",
        "all": "partial: 2 of 3 calls made; missing cancel_reservation(reservation_id=C3)",
        "state": "not met: reservations.QZ7Y2K.status is active, expected cancelled",
    }
    assert set(r.breakdown) == {"read_target", "cancelled", "all", "state"}
    off = check.evaluate(t, {"target": "QZ7Y2K", "allowed": False})
    assert off.reasons["cancelled"] == "off: active only when allowed is true"
    assert off.reasons["no_write"] == "not met: forbidden call cancel_reservation(reservation_id=A1) at step 2"
