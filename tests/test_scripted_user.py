"""The scripted user behaves like a person with a request: the exact episodes of issue 10 (item 4), one by one, and a
"chatty oracle" (an oracle that announces every tool call first) that still scores 1.0 on every bundled env."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import trace_envs  # noqa: F401  (registers the bundled envs)
from trace_envs.checks.clauses import DEFAULT_YES
from trace_envs.generate.policies import chatty, run_actions
from trace_envs.generate.progress_phrases import PROGRESS_PHRASES
from trace_envs.runtime import STOP, ScriptedUser, UserRequest, parse_action
from trace_envs.runtime import user as user_module
from trace_envs.language.words import request_words
from trace_envs.runtime.phrases import path_words, user_phrase

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = sorted(p.parent.name for p in (ROOT / "generated").glob("*/spec.json"))
FACTS = {
    "reservation id": "QZ7Y2K",
    "user id": "omar_davis_3817",
    "reason for cancellation": "my plans changed",
    "payment method": "gift_card_7815826",
}
CANCEL = UserRequest.write("cancel_reservation", "reservation_id", "QZ7Y2K")


def _user(*requests: UserRequest, facts: dict[str, str] | None = None) -> ScriptedUser:
    return ScriptedUser(facts=FACTS if facts is None else facts, requests=list(requests) or [CANCEL])


def _call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


# ---- phrases -----------------------------------------------------------------------------------------------------------


def test_request_words_and_phrase_from_tool_names():
    assert request_words("cancel_reservation") == ("cancel",)
    baggage = request_words("update_reservation_baggages")
    assert {"update", "change", "add", "baggage", "bags"} <= set(baggage) and "reservation" not in baggage
    assert {"flights", "flight", "modify"} <= set(request_words("update_reservation_flights"))
    assert "order" not in request_words("cancel_pending_order")
    assert {"transfer", "human"} <= set(request_words("transfer_to_human_agents"))
    assert user_phrase("cancel_reservation", "reservation_id", "QZ7Y2K") == "cancel reservation QZ7Y2K"
    assert user_phrase("cancel_pending_order", "order_id", "#W1") == "cancel pending order #W1"
    assert user_phrase("update_reservation_baggages", "reservation_id", "QZ7Y2K") == (
        "update the baggages of reservation QZ7Y2K"
    )
    assert CANCEL.action_words == ("cancel",) and CANCEL.phrase == "cancel reservation QZ7Y2K"
    # every naming style asks in words ("use reassignApprover" before)
    assert user_phrase("reassignApprover") == user_phrase("reassign_approver") == "reassign the approver"
    assert user_phrase("leave_request.submit") == "submit the leave request"


def test_a_request_without_its_tool_is_refused():
    with pytest.raises(ValueError, match="needs the tool"):
        UserRequest(kind="write", phrase="cancel it")
    with pytest.raises(ValueError, match="kind"):
        UserRequest(kind="delete", tool="x", phrase="x")  # type: ignore[arg-type]


# ---- the user's replies ------------------------------------------------------------------------------------------------


def test_a_progress_message_does_not_end_the_conversation():
    user = _user()
    for text in ["Let me look into that for you.", "One moment, please.", "I'll check your reservation now.",
                 "Checking the details\u2026", "I\u2019m going to pull up the record."]:
        assert user.reply(text) == (user_module.WAIT_REPLY, False)
    assert user.statuses == ["pending"]


@pytest.mark.parametrize(
    "question, label",
    [
        ("Could you give me your booking reference?", "reservation id"),
        ("What's the confirmation code?", "reservation id"),
        ("What is the reservation number?", "reservation id"),
        ("Please provide your trip ID so I can look it up.", "reservation id"),
        ("What is your user ID?", "user id"),
        ("Can I have your account number, please?", "user id"),
        ("What's your username?", "user id"),
        ("May I ask why you want to cancel?", "reason for cancellation"),
        ("How would you like to pay?", "payment method"),
        ("Which card should the refund go to?", "payment method"),
    ],
)
def test_questions_for_facts_are_answered_by_intent(question, label):
    reply, ended = _user().reply(question)
    assert (reply, ended) == (f"My {label} is {FACTS[label]}.", False)


def test_every_fact_asked_for_is_given_and_given_again():
    user = _user()
    ask = "To get started, could you tell me your user id and your booking reference?"
    both = "My reservation id is QZ7Y2K. My user id is omar_davis_3817."
    assert user.reply(ask) == (both, False)
    assert user.reply(ask) == (both, False)


def test_a_sentence_that_states_the_value_asks_nothing():
    user = _user()
    reply, _ = user.reply("I have your reservation id QZ7Y2K here. Could you confirm your user id?")
    assert reply == "My user id is omar_davis_3817."


def test_a_vague_confirmation_question_gets_no_yes():
    user = _user()
    for text in ["Shall I proceed?", "Do you confirm? Please answer yes or no.", "Should I go ahead with it?",
                 "Shall I cancel it?", "Do you want me to cancel reservation ABC123?"]:
        reply, ended = user.reply(text)
        assert (reply, ended) == (user_module.VAGUE_REPLY, False)
        assert not re.search(DEFAULT_YES, reply)
    assert user.statuses == ["pending"]


def test_a_named_confirmation_gets_yes():
    user = _user()
    reply, ended = user.reply("I'm about to cancel reservation QZ7Y2K. Do you confirm?")
    assert (reply, ended) == (user_module.YES_REPLY, False) and re.search(DEFAULT_YES, reply)
    for text in ["Would you like me to cancel reservation QZ7Y2K?", "Do you want to cancel reservation QZ7Y2K?",
                 "Please confirm that I should cancel reservation QZ7Y2K.",
                 "Cancelling reservation QZ7Y2K (refund to the original payment). Is that correct?"]:
        assert _user().reply(text) == (user_module.YES_REPLY, False), text
    # A confirmation question that mentions a fact label is still a confirmation, not a question for the fact.
    reply, _ = _user().reply("Shall I cancel the booking with reservation id QZ7Y2K and refund your payment method?")
    assert reply == user_module.YES_REPLY


def test_a_declined_request_is_never_asked_for_again():
    declining = UserRequest.write("cancel_reservation", "reservation_id", "QZ7Y2K", decline=True)
    user = _user(declining)
    reply, ended = user.reply("I'm about to cancel reservation QZ7Y2K. Do you confirm?")
    assert (reply, ended) == (user_module.NO_REPLY, False) and not re.search(DEFAULT_YES, reply)
    assert user.statuses == ["declined"]
    assert user.reply("Are you sure you don't want me to cancel reservation QZ7Y2K?") == (user_module.NO_REPLY, False)
    reply, ended = user.reply("Understood, I have not made any changes.")
    assert ended and reply == f"{user_module.DONE_REPLY} {STOP}" and "QZ7Y2K" not in reply


def test_several_named_requests_are_answered_together():
    a = UserRequest.write("cancel_reservation", "reservation_id", "AAA111")
    b = UserRequest.write("cancel_reservation", "reservation_id", "BBB222", decline=True)
    user = _user(a, b)
    reply, ended = user.reply("I will cancel reservations AAA111 and BBB222. Shall I proceed?")
    assert not ended and reply.startswith("Yes, please go ahead and cancel reservation AAA111.")
    assert "don't cancel reservation BBB222" in reply
    assert user.statuses == ["pending", "declined"]
    assert user.reply("Done.") == ("Could you please cancel reservation AAA111?", False)


def test_a_refusal_resolves_the_request_and_ends():
    user = _user()
    reply, ended = user.reply("I'm sorry, but I cannot cancel reservation QZ7Y2K: it has a flown segment.")
    assert (reply, ended) == (f"{user_module.REFUSED_REPLY} {STOP}", True)
    assert user.statuses == ["refused"]


def test_a_failed_lookup_is_not_a_refusal():
    user = _user()
    assert user.reply("I can't find reservation QZ7Y2K.") == ("Could you please cancel reservation QZ7Y2K?", False)
    assert user.reply("I'm unable to locate it.")[1] is False and user.statuses == ["pending"]


def test_a_refusal_of_one_request_moves_on_to_the_next():
    a = UserRequest.write("cancel_reservation", "reservation_id", "AAA111")
    b = UserRequest.write("cancel_reservation", "reservation_id", "BBB222")
    user = _user(a, b)
    reply, ended = user.reply("Reservation AAA111 is basic economy, so I'm unable to cancel it.")
    assert (reply, ended) == ("I understand. Could you please cancel reservation BBB222?", False)
    user.observe_call("cancel_reservation", {"reservation_id": "BBB222"}, ok=True)
    reply, ended = user.reply("Reservation BBB222 is cancelled.")
    assert ended and user.statuses == ["refused", "done"]


def test_a_refusal_that_announces_a_transfer_waits_for_it():
    user = _user()
    reply, ended = user.reply("I can't do that myself; let me transfer you to a human agent.")
    assert (reply, ended) == (user_module.WAIT_REPLY, False) and user.statuses == ["refused"]


def test_a_claim_of_success_with_nothing_done_gets_nudges_then_ends():
    user = _user()
    nudge = ("Could you please cancel reservation QZ7Y2K?", False)
    for _ in range(user_module.MAX_NUDGES):
        assert user.reply("Your reservation has been cancelled.") == nudge
    assert user.reply("Done.") == (f"{user_module.GIVE_UP_REPLY} {STOP}", True)


def test_a_tool_call_between_nudges_restarts_the_count():
    user = _user()
    for _ in range(user_module.MAX_NUDGES):
        user.reply("Done.")
    user.observe_call("get_reservation_details", {"reservation_id": "QZ7Y2K"}, ok=True, kind="read")
    assert user.reply("Done.") == ("Could you please cancel reservation QZ7Y2K?", False)


def test_only_a_successful_call_on_the_target_fulfils_a_request():
    user = _user()
    user.observe_call("cancel_reservation", {"reservation_id": "QZ7Y2K", "x": 1}, ok=False)
    user.observe_call("cancel_reservation", {"reservation_id": "OTHER1"}, ok=True)
    user.observe_call("update_reservation_flights", {"reservation_id": "QZ7Y2K"}, ok=True)
    assert user.statuses == ["pending"]
    user.observe_call("cancel_reservation", {"reservation_id": "QZ7Y2K"}, ok=True)
    assert user.statuses == ["done"]
    assert user.reply("Your reservation is cancelled.") == (f"{user_module.DONE_REPLY} {STOP}", True)


def test_an_info_request_is_resolved_by_a_statement_after_a_read():
    info = UserRequest(kind="info", tool="get_reservation_details", phrase="tell me the total amount paid")
    user = _user(info)
    assert user.reply("The total is 1234.") == ("Could you please tell me the total amount paid?", False)
    user.observe_call("get_reservation_details", {"reservation_id": "QZ7Y2K"}, ok=True, kind="read")
    assert user.reply("The total is 1234. Anything else I can do?") == (f"{user_module.NOTHING_ELSE_REPLY} {STOP}", True)


def test_other_questions_get_the_request_not_a_yes():
    user = _user()
    reply, ended = user.reply("What is your email address?")
    assert (reply, ended) == ("I don't know. I just want to cancel reservation QZ7Y2K.", False)


def test_goodbye_ends_even_with_a_request_pending():
    assert _user().reply("Thanks for contacting us. Have a nice day!") == (f"{user_module.GOODBYE_REPLY} {STOP}", True)
    assert _user().reply("Bye!")[1] is True


def test_only_the_yes_reply_reads_as_agreement():
    """The checks' Confirmation clause counts a user message matching DEFAULT_YES as a yes: waiting, nudging, not
    knowing or declining must never match it, or an agent could collect a yes without naming the action."""
    replies = [v for k, v in vars(user_module).items() if k.endswith("_REPLY") and k != "YES_REPLY"]
    replies += [_user().reply(t)[0] for t in ["Done.", "What's your email?", "I'm sorry, I can't do that. Anything else?"]]
    assert len(replies) >= 10
    assert not [r for r in replies if re.search(DEFAULT_YES, r)]


def test_odd_text_never_raises():
    user = _user()
    for text in ["", "?", "???", "\x00", "x" * 100_000, "let me" * 10_000 + "?", "(" * 1000, "\u2019?\n\n."]:
        reply, ended = user.reply(text)
        assert isinstance(reply, str) and isinstance(ended, bool)


# ---- in the env --------------------------------------------------------------------------------------------------------


def _chatty(actions: list[str], phrases: tuple[str, ...]) -> list[str]:
    """The oracle, with a progress message before every tool call (what a careful agent does), `phrases` in turn."""
    out: list[str] = []
    for action in actions:
        if parse_action(action).calls:
            out.append(phrases[len(out) % len(phrases)])
        out.append(action)
    return out


# The progress messages of issue 20 that ended the conversation (the first on every env), and the real agents' ones.
ISSUE_20_PROGRESS = ("Let me take care of that for you now.", "I'm on it.", "Alright, pulling up the details.")


@pytest.mark.parametrize("phrases", [("Let me look into that for you.",), *[(p,) for p in ISSUE_20_PROGRESS],
                                     PROGRESS_PHRASES], ids=["look_into", "take_care", "on_it", "pulling_up", "real"])
@pytest.mark.parametrize("name", BUNDLED)
def test_chatty_oracle_scores_one_on_every_bundled_env(name, phrases):
    env = gym.make(f"trace/{name}").unwrapped
    for seed in range(12):
        env.reset(seed=seed)
        score, info = run_actions(env, _chatty(env.oracle_actions(), phrases), seed)
        assert score == 1.0, (name, seed, info.get("reward_breakdown"))


def test_the_validation_oracle_announces_with_real_agents_phrases():
    actions = [_call("get_reservation_details", reservation_id="QZ7Y2K"), "Done.",
               _call("cancel_reservation", reservation_id="QZ7Y2K")]
    announced = chatty(actions, offset=len(PROGRESS_PHRASES) - 1)
    assert announced == [PROGRESS_PHRASES[-1], actions[0], "Done.", PROGRESS_PHRASES[0], actions[2]]


def test_failed_writes_do_not_satisfy_the_user():
    """Three cancel_reservation calls that each returned an error leave every request pending: "Done." gets a nudge."""
    env = gym.make("trace/airline_cancel_every_requested_reservation").unwrapped
    env.reset(seed=0)
    targets = env.scenario.bindings["targets"]
    for t in targets:
        result = json.loads(env.call_tool("cancel_reservation", {"reservation_id": t, "bogus": 1}))
        assert "unknown argument" in result["error"]
    reply, ended = env.say("Done.")
    assert not ended and reply == f"Could you please cancel reservation {targets[0]}?"
    for t in targets:
        env.call_tool("cancel_reservation", {"reservation_id": t})
    reply, ended = env.say("All of them are cancelled.")
    assert ended and reply.startswith(user_module.DONE_REPLY)


def test_the_user_in_the_env_waits_and_answers_facts():
    env = gym.make("trace/airline_ask_for_reservation_id")
    env.reset(seed=3)
    obs, _, terminated, _, _ = env.step("Let me look into that for you.")
    assert obs == user_module.WAIT_REPLY and not terminated
    label, value = next((k, v) for k, v in env.unwrapped.scenario.facts.items() if "reservation" in k)
    obs, _, terminated, _, _ = env.step("Could you give me your booking reference?")
    assert obs == f"My {label} is {value}." and not terminated


def test_a_repeated_user_action_is_done_each_time_asked_and_resolves_nothing():
    """A check of the user's phone (tau2 telecom's check_network_status) is done every time the agent asks for it; a
    fix at most once, and only a fix resolves the user's request."""
    from trace_envs.runtime.scenario import RESULT, UserAction

    check = UserAction(tool="check_network_status", verbs=("check",), objects=("network status",), repeat=True,
                       report=f"It shows: {RESULT}")
    fix = UserAction(tool="toggle_airplane_mode", verbs=("turn off",), objects=("airplane mode",), report="Done.")
    user = ScriptedUser(requests=[UserRequest(kind="act", phrase="get my data working again")], actions=[fix, check])
    for _ in range(2):
        assert user.reply("Please check the network status on your phone.") == (f"It shows: {RESULT}", False)
        assert [a.tool for a in user.take_performed()] == ["check_network_status"]
    assert user.statuses == ["pending"]
    # in one sentence: the fix, then the check (the order of the user's actions)
    reply, _ = user.reply("Please turn off airplane mode and check the network status again.")
    assert reply == f"Done. It shows: {RESULT}"
    assert [a.tool for a in user.take_performed()] == ["toggle_airplane_mode", "check_network_status"]
    user.reply("Please turn off airplane mode.")
    assert user.take_performed() == []
    assert user.reply("Thanks, it works now.")[1] and user.statuses == ["done"]


def test_a_record_path_is_said_in_words_once():
    """How the user and the env's prose name a field: a list's item by its position, a sum over a list, and a group
    whose name the field's own repeats said once (a nested randomized record's `state.rental_state`)."""
    assert path_words("flights.0.status") == "status of the first flight"
    assert path_words("payment_history.*.amount") == "amount over the payment history"
    assert path_words("rental.state.rental_state") == "rental state"
    assert path_words("address.city") == "address city"
