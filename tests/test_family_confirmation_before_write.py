"""confirmation_before_write: a yes to a question naming the action and the reservation, before the write."""

from __future__ import annotations

import re

import pytest

from _family import committed_env, seed_where, write_args
from trace_envs.checks.clauses import DEFAULT_ASK
from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.runtime.world import call

NAME = "airline_confirm_before_baggage_update"
READ, WRITE = "get_reservation_details", "update_reservation_baggages"


@pytest.fixture(scope="module")
def env_cls():
    return committed_env(NAME)


def test_users_who_say_no_are_balanced(env_cls):
    env = env_cls()
    declined = []
    for seed in range(50):
        env.reset(seed=seed)
        declined.append(env.scenario.bindings["declined"])
        texts = [a for a in env.oracle_actions() if not a.startswith("{")]
        assert re.search(DEFAULT_ASK, texts[0]) and env.scenario.bindings["target"] in texts[0]
        assert not re.search(DEFAULT_ASK, texts[-1])
    assert 0.4 <= sum(declined) / 50 <= 0.6


def test_confirmed_episodes_score_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: not s.bindings["declined"])
    target = env.scenario.bindings["target"]
    args = write_args(env, WRITE)
    read, write = call(READ, reservation_id=target), call(WRITE, **args)
    named = (f"I'm about to update the baggages of reservation {target}: {args['total_baggages']} bags in total, "
             f"{args['nonfree_baggages']} of them paid, charged to {args['payment_id']}. Do you confirm (yes/no)?")
    assert run_actions(env, [read, named, write, "Done. Have a nice day."], seed)[0] == 1.0
    # the policy asks to list the action's details: a yes to the action and the id alone confirms no write of these
    bare = f"I'm about to update the baggages of reservation {target}. Do you confirm (yes/no)?"
    assert run_actions(env, [read, bare, write, "Done. Have a nice day."], seed)[0] == 0.0
    # writing first and asking afterwards confirms nothing, and the lookup is gated on the confirmed write
    score, info = run_actions(env, [read, write, named, "Done."], seed)
    assert score == 0.0 and info["reward_breakdown"] == {"confirmed": 0.0, "read_first": 0.0, "no_other_write": 1.0,
                                                       "arguments_bound": 1.0}
    # "Shall I proceed?" names nothing: the user asks what, and a write after it is unconfirmed
    reply, _ = (env.reset(seed=seed), env.step(read), env.say("Shall I proceed?"))[2]
    assert "exactly what you are going to do" in reply
    assert run_actions(env, [read, "Shall I proceed?", write, "Done."], seed)[0] == 0.0
    # a message that merely contains "proceed" is no question at all
    assert run_actions(env, [read, "I will proceed with the update now.", write, "Done."], seed)[0] == 0.0


def test_declined_episodes_score_exactly(env_cls):
    env = env_cls()
    seed = seed_where(env, lambda s: s.bindings["declined"])
    assert run_scripted(env, "oracle", seed)[0] == 1.0
    # the user said no and the agent wrote anyway: the write zeroes the score
    score, info = run_scripted(env, "mutant", seed, mutant="forbidden_extra_call")
    assert score == 0.0 and info["reward_breakdown"]["no_write_declined"] == 0.0
    # after a no, the user does not ask for the change again
    env.reset(seed=seed)
    target = env.scenario.bindings["target"]
    env.step(call(READ, reservation_id=target))
    reply, _ = env.say(f"I'm about to update the baggages of reservation {target}. Do you confirm (yes/no)?")
    assert reply.startswith("No")
    reply, _ = env.say("Noted.")
    assert "update" not in reply.lower()


def test_a_declined_question_must_state_the_values_the_write_would_pass(env_cls):
    """Found by rl-envdoctor's corrupted oracle: on a declined seed, the question with 3 bags where the request is
    2 earned `asked` and 1.0. The question the user says no to must state what a confirmed write's question states."""
    env = env_cls()
    seed = seed_where(env, lambda s: s.bindings["declined"])
    target = env.scenario.bindings["target"]
    oracle = env.oracle_actions()
    question = next(a for a in oracle if not a.startswith("{"))
    bags = env.scenario.bindings["write_args"]["total_baggages"]
    assert f'"total_baggages": {bags}' in question
    wrong = question.replace(f'"total_baggages": {bags}', f'"total_baggages": {bags + 1}')
    read = call(READ, reservation_id=target)
    closing = oracle[-1]
    assert run_actions(env, [read, question, closing], seed)[0] == 1.0
    score, info = run_actions(env, [read, wrong, closing], seed)
    assert score == 0.0 and info["reward_breakdown"]["asked"] == 0.0


def test_a_stranger_domains_confirmation_deficit_is_recovered_and_nothing_else_is_found(tmp_path):
    """Randomizer seed 15 (insurance): `certificates.issue`, described "Get a new certificate", answers "...
    issued." (a write), and the users who said no to it ("No, that's okay.") teach no rule about the policies they
    held (before: a false policy_refusal gate on the policy's cover). Seed 22, where agents confirm a write in the
    user's words, is mined in test_family_conditional_request (one mining for both)."""
    from _family import mine_random

    dom, caps = mine_random(15, tmp_path)
    score = dom.score_recovery(caps)
    assert "no_confirmation_before_issue" in score["found"] and score["false_findings"] == []


def test_a_question_the_user_said_no_to_is_the_capability_at_work():
    """A run that made no write because the user said no to the agent's question about it is PRESENT (before: NA, and
    where an unconfirmed write the user agreed to passes anyway, as on randomizer seeds 36, 53 and 61, the few runs
    that wrote after a question could not carry the contrast). A run that neither wrote nor asked says nothing."""
    from trace_envs.checks.run_view import RunView
    from trace_envs.families.confirmation_before_write.detector import ConfirmationBeforeWriteDetector, _confirmed
    from trace_envs.trajectories.models import Run

    def labelled(*turns: tuple[str, str], rivals: list[list[str]] = ()) -> str:
        run = Run(run_id="r/0/0", source="test", task_id="0", messages=[{"role": r, "content": t} for r, t in turns],
                  reward=1.0, success=True, tool_calls=[])
        view = RunView(run, {"suspend_supply": "write"})
        args = {"tool": "suspend_supply", "rivals": list(rivals)}
        return ConfirmationBeforeWriteDetector().label(view, _confirmed("suspend_supply"), args)

    asked = ("assistant", "Here is what I'll do: suspend the supply at SP81 from 2025-05-01. Shall I proceed?")
    assert labelled(("user", "Please pause the supply at SP81."), asked, ("user", "No, that's okay.")) == "PRESENT"
    assert labelled(("user", "Please pause the supply at SP81."), asked, ("user", "Actually, not yet.")) == "PRESENT"
    assert labelled(("user", "Please pause the supply at SP81."), ("assistant", "Anything else?"),
                    ("user", "No, that's all.")) == "NA"
    assert labelled(("user", "Please pause the supply at SP81."), asked, ("user", "Yes please.")) == "NA"
    # a question naming another write's words more than this one's is about that write (randomizer seed 50: "take
    # enrollment EN1 pass/fail?" declined is no confirmation of `course_sections.enroll`)
    other = ("assistant", "Here is what I'll do: move the suspended supply at SP81 to tariff flex. Shall I proceed?")
    assert labelled(("user", "Move SP81 to flex."), other, ("user", "No, that's okay."),
                    rivals=[["move", "tariff", "flex"]]) == "NA"
    assert labelled(("user", "Please pause the supply at SP81."), asked, ("user", "No, that's okay."),
                    rivals=[["move", "tariff", "flex"]]) == "PRESENT"


def test_the_words_users_ask_for_a_write_with_are_learned_from_the_runs():
    """What users say before the runs that make a write and seldom before the others (seed 22's clinic)."""
    from trace_envs.trajectories.models import Run, ToolCall
    from trace_envs.trajectories.results import request_vocabularies

    def run(i: int, said: str, tool: str) -> Run:
        msgs = [{"role": "user", "content": said}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": tool, "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "name": tool, "content": "ok"}]
        return Run(run_id=f"c/{i}/0", source="test", task_id=str(i), messages=msgs, reward=1.0, success=True,
                   tool_calls=[ToolCall(id="c", name=tool, arguments={}, result="ok", message_index=1)])

    runs = [run(i, f"I want to make appointment APT{i} a video visit.", "appointments.convert") for i in range(4)]
    runs += [run(i, f"Please move appointment APT{i} to another clinician.", "clinicians.switch") for i in range(4, 9)]
    said = request_vocabularies(runs, ["appointments.convert", "clinicians.switch"])
    assert said["appointments.convert"] == ["make", "video", "visit"]
    assert "appointment" not in said["clinicians.switch"]  # every user says it


def test_the_card_asked_for_is_one_the_reservation_was_paid_with(env_cls):
    """Issue 26: every scenario's user asked to pay with the same card (one real call's), whoever they were. An id
    argument the record holds under the same name (its payment history's payment_id) is the record's own."""
    env = env_cls()
    cards = set()
    for seed in range(20):
        env.reset(seed=seed)
        record = env.scenario.state["records"][env.scenario.bindings["target"]]
        card = env.scenario.bindings["write_args"]["payment_id"]
        assert card in {p["payment_id"] for p in record["payment_history"]}
        cards.add(card)
    assert len(cards) >= 3
