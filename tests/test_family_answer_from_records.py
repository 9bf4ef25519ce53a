"""answer_from_records: read the order the user asks about and tell them its status in a sentence; a read left
unsaid, a pasted record or another order's status earns nothing. Labelled and proposed on real tau-bench airline and
tau2 retail runs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from _family import committed_example, seed_where
from trace_envs.checks.run_view import RunView
from trace_envs.language.values import scalar_leaves
from trace_envs.mining.detector import get_detector
from trace_envs.generate.policies import run_actions, run_scripted
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.publish import MODULE_FILE, generate_one
from trace_envs.mining.label import label_view
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.runtime.world import call
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

NAME = "retail_tell_order_status"
READ = "get_order_details"
SEEDS = range(20)
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TAU = DATA / "tau-bench" / "gpt-4o-airline.json"
RETAIL = [DATA / "tau2-bench" / "results" / f"{m}_retail.json" for m in ("gpt-4.1", "ft-gpt-4.1")]
needs_data = pytest.mark.skipif(not TAU.exists(), reason="real data not found beside the repo (../shared/data)")


@pytest.fixture(scope="module")
def generated():
    return committed_example(NAME)


def _domain(paths):
    """The runs, their tool kinds and this family's candidates over them."""
    runs = load_runs(paths).runs
    profile = build_profile(runs)
    ours = {c.name: c for c in propose_offline(profile, runs) if c.spec.family == "answer_from_records"}
    return runs, {n: t.kind for n, t in profile.tools.items()}, ours


@pytest.fixture(scope="module")
def airline():
    return _domain([TAU])


@pytest.fixture(scope="module")
def retail():
    return _domain(RETAIL)


def test_the_user_asks_for_the_status_of_one_of_their_orders(generated):
    _, cls = generated
    env = cls()
    for seed in SEEDS:
        env.reset(seed=seed)
        b, records = env.scenario.bindings, env.scenario.state["records"]
        assert b["answer"] == records[b["target"]]["status"] and b["target"] in env.opening
        assert "status" in env.opening and b["answer"] not in env.opening
        statuses = [r["status"] for r in records.values()]
        assert len(records) == 3 and len(set(statuses)) == 3  # another order's status is a wrong answer
        assert len({r["user_id"] for r in records.values()}) == 1
    # the answer varies over seeds (no constant reply is right)
    assert len({(env.reset(seed=s), env.scenario.bindings["answer"])[1] for s in SEEDS}) >= 3


def test_same_seed_same_episode(generated):
    _, cls = generated
    a, b = cls(), cls()
    for seed in (0, 7):
        assert a.reset(seed=seed)[0] == b.reset(seed=seed)[0]
        assert a.oracle_actions() == b.oracle_actions() and a.mutant_actions() == b.mutant_actions()
    assert a.reset(seed=1)[0] != a.reset(seed=2)[0]


def test_oracle_earns_one_and_every_mutant_less(validated_example):
    _, result, cls = validated_example(NAME)
    assert {"paste_record", "read_never_tell"} <= set(result.report.mutants)
    env = cls()
    for seed in SEEDS:
        assert run_scripted(env, "oracle", seed)[0] == 1.0, seed
        for mutant in env.mutant_actions():
            assert run_scripted(env, "mutant", seed, mutant=mutant)[0] == 0.0, (seed, mutant)


def test_natural_answers_earn_and_lazy_ones_do_not(generated):
    _, cls = generated
    env = cls()
    seed = seed_where(env, lambda s: s.bindings["answer"] == "cancelled")
    b = env.scenario.bindings
    read = call(READ, order_id=b["target"])
    record = env.scenario.state["records"][b["target"]]
    # announcing, then an American spelling of the value in a sentence
    careful = ["Let me look that order up for you.", read, f"Your order {b['target']} was canceled. Anything else?"]
    assert run_actions(env, careful, seed=seed)[0] == 1.0
    # the record pasted, the value alone, the value before the read: nothing
    assert run_actions(env, [read, f"Here it is: {json.dumps(record)}"], seed=seed)[0] == 0.0
    assert run_actions(env, [read, "cancelled"], seed=seed)[0] == 0.0
    assert run_actions(env, ["Your order was cancelled, let me check.", read, "Done."], seed=seed)[0] == 0.0
    # every value of the record listed in prose: nothing
    dump = "Your order: " + ", ".join(str(v) for v in scalar_leaves(record))
    assert run_actions(env, [read, dump + "."], seed=seed)[0] == 0.0
    # the other order's status after reading it: the penalty
    other = next(k for k in env.scenario.state["records"] if k != b["target"])
    score, info = run_actions(env, [call(READ, order_id=other), read, careful[-1]], seed=seed)
    assert score == 0.0 and info["reward_breakdown"]["no_other_read"] == 0.0


# ------------------------------------------------------------------------------------------------------ real data
@needs_data
def test_proposed_on_two_real_domains_with_their_own_tools(airline, retail):
    _, _, ours = airline
    assert set(ours) == {"tell_date_after_get_reservation_details"}
    cand = ours["tell_date_after_get_reservation_details"]
    assert cand.spec.roles == {"read": "get_reservation_details", "key": "reservation_id"}
    assert cand.spec.params == {"field": "flights.0.date", "label": "date of the first flight"}
    assert cand.args["fields"] == ["flights.0.date", "flights.0.price"]
    _, _, ours = retail
    assert set(ours) == {"tell_price_after_get_order_details"}
    cand = ours["tell_price_after_get_order_details"]
    assert cand.spec.roles == {"read": READ, "key": "order_id"}
    # a size "M" is a value a sentence states (one capital letter), so two runs now ask about the item's size
    assert cand.args["fields"] == ["items.0.price", "fulfillments.0.tracking_id.0", "items.0.options.size"]


@needs_data
def test_the_mined_airline_candidate_makes_a_sound_env(airline, tmp_path):
    spec = airline[2]["tell_date_after_get_reservation_details"].spec
    result = generate_one(spec, tmp_path)
    assert result.published, result.error
    assert result.report.oracle == 1.0 and max(result.report.mutants.values()) == 0.0
    env = env_class(import_module_from(tmp_path / spec.name / MODULE_FILE))()
    env.reset(seed=4)
    b = env.scenario.bindings
    assert "date of the first flight of my reservation" in env.opening
    day = dt.date.fromisoformat(b["answer"])
    said = f"Your first flight is on {day:%B} {day.day}, {day.year}. Anything else?"  # "May 17, 2024"
    assert run_actions(env, [call("get_reservation_details", reservation_id=b["target"]), said], seed=4)[0] == 1.0


def _label(domain, name, run_id, **changes):
    runs, kinds, ours = domain
    cand = ours[name]
    run = next(r for r in runs if r.run_id == run_id)
    return label_view(cand, RunView(run.model_copy(update=changes), kinds))


@needs_data
def test_labels_of_named_real_runs(airline, retail):
    tracking = "tell_price_after_get_order_details"
    # "Can you give me the tracking number for that order?" ... "The tracking number ... is 746342064230."
    assert _label(retail, tracking, "gpt-4.1_retail/32/0") == "PRESENT"
    # the same question, answered in messages that also list five or six other values of the orders: not told
    assert _label(retail, tracking, "ft-gpt-4.1_retail/32/0") == "NA"
    # a question about the price of an item whose answer was never a record's value, failed on a write: NA
    assert _label(retail, tracking, "gpt-4.1_retail/62/0") == "NA"
    # gpt-4o-airline/44/1 fails on what was said only (the bag allowance) but states the cabin it was asked
    runs, kinds, ours = airline
    cand = ours["tell_date_after_get_reservation_details"]
    run = next(r for r in runs if r.run_id == "gpt-4o-airline/44/1")
    view = RunView(run, kinds)
    assert view.attribution.kinds == {"said"}
    assert get_detector("answer_from_records").label(view, cand.check, {**cand.args, "fields": ["cabin"]}) == "PRESENT"
    assert label_view(cand, view) == "NA"  # no question about the flight's date or price


@needs_data
def test_a_real_run_that_never_says_what_it_read_is_lacking(retail):
    run = next(r for r in retail[0] if r.run_id == "gpt-4.1_retail/32/0")
    # the agent's answer left out (the rest of the run as it was), and the run failed for it
    messages = [dict(m, content="I found your recent orders. Let me know if you need anything else.")
                if m.get("role") == "assistant" and "746342064230" in (m.get("content") or "") else m
                for m in run.messages]
    name = "tell_price_after_get_order_details"
    assert _label(retail, name, run.run_id, messages=messages, success=False, reward=0.0) == "LACKING"
    assert _label(retail, name, run.run_id, messages=messages, success=True, reward=1.0) == "NA"
    # without expected actions, the portable check decides: the value was never told
    assert _label(retail, name, run.run_id, messages=messages, ground_truth=None) == "LACKING"
    assert _label(retail, name, run.run_id, ground_truth=None) == "PRESENT"


def test_one_letter_and_numeric_text_values_are_told_as_written():
    """A section "B" or credits "2" are answers a user asks for (randomizer seeds 19 and 26 were missed: neither was
    a value a sentence could state); "a" as an article, "I" as a pronoun and an "A" opening a sentence state nothing."""
    from trace_envs.families.answer_from_records.task import tellable
    from trace_envs.language.values import text_mentions

    assert tellable("B") and tellable("2") and not tellable("b") and not tellable("I")
    assert text_mentions("B", "Your section is B.") and text_mentions("2", "It carries 2 credits.")
    assert not text_mentions("B", "b") and not text_mentions("A", "I found a record.")
    assert not text_mentions("A", "Done. A new record.") and text_mentions("A", "Your grade: A")
    assert not text_mentions("B", "enrollment EN-89886 B2")


def test_a_listing_read_is_asked_about_by_the_listed_records_own_ids(tmp_path):
    """Randomizer seed 26 (list-shaped records): the user asks for the credits of one enrollment of the student's
    list; the fields are the listed record's, keyed by its own id, and the env publishes (before, the field was the
    list's first item's and 'no read of another record' banned the listing read itself)."""
    from _family import mine_random

    dom, caps = mine_random(26, tmp_path)
    ours = [c for c in caps if c["family"] == "answer_from_records"]
    assert [c["roles"] for c in ours] == [{"read": "student_enrollments.fetch", "key": "enrollment_id"}]
    assert "never_tells_credits" in dom.score_recovery(caps)["found"]


def test_a_camel_case_field_is_asked_for_in_words_with_a_word_between():
    """Randomizer seed 25 (camelCase records): "What is the next meter reading date of my service point SP1?" asks for
    `nextReading`; a field named in a user's own hand-over is still no question."""
    from trace_envs.families.answer_from_records.detector import asks_about, field_words

    assert field_words("servicePoint.details.nextReading") == "next reading"
    assert asks_about(["What is the next meter reading date of my service point SP6991493?"],
                      "servicePoint.details.nextReading")
    assert asks_about(["Could you tell me the tracking number of my order?"], "fulfillments.0.tracking_id")
    assert not asks_about(["My name and zip code are Ana, 10001."], "zip_code")


def test_a_request_to_act_on_a_field_does_not_ask_for_its_value():
    """Held-out randomizer seed 84: users asked "Could you please move the contract for service point SP5054077 to my
    new home?" (a transfer) more often than "I'd like to know the meter type of service point ...", so the miner
    proposed telling the contract, whose env could not be built, and lost the meter-type deficit."""
    from trace_envs.families.answer_from_records.detector import asks_about
    from trace_envs.language.questions import asks_for_an_action

    move = "Could you please move the contract for service point SP5054077 to my new home?"
    assert asks_for_an_action(move) and not asks_about([move], "service_points.0.contract")
    for question in ["Could you tell me the contract of service point SP5054077?",
                     "Can you check what the contract on my service point is?",
                     "I'd like to know the meter type of service point SP7331963."]:
        assert not asks_for_an_action(question), question
    assert asks_about(["Could you tell me the contract of service point SP5054077?"], "service_points.0.contract")
    assert asks_about(["I'd like to know the meter type of service point SP7331963."], "service_points.0.meter_type")
