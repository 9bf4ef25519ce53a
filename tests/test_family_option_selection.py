"""Option selection (`airline_pick_flight_meeting_constraints`): the exact scores of planted episodes (the oracle on
each scenario class, another option, the cheapest or the first listed by habit, the options pasted back, a write per
option, no search), honest search results, the labeler on planted runs and the candidate mined from the real
tau-bench airline runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _family import EXAMPLES, committed_env, seed_where

from trace_envs.datasets.planted import generate_planted
from trace_envs.generate.policies import run_actions, run_policy, run_scripted
from trace_envs.mining.label import label_run
from trace_envs.mining.propose_offline import propose_offline
from trace_envs.runtime.world import call
from trace_envs.spec.io import load_specs
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.loaders import load_runs
from trace_envs.trajectories.profile import build_profile

NAME = "airline_pick_flight_meeting_constraints"
TAU_BENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "gpt-4o-airline.json"
SEEDS = range(30)


@pytest.fixture(scope="module")
def env():
    cls = committed_env(NAME)
    return cls()


def _options(env) -> list[dict]:
    return env.scenario.state["options"]


def _search(env) -> str:
    return call("search_direct_flight", **env.scenario.state["search_args"])


def _oracle_with(env, flight: str) -> list[str]:
    """The oracle's episode with `flight` written instead of the chosen one."""
    chosen = env.scenario.bindings["chosen"]
    return [a.replace(chosen, flight) for a in env.oracle_actions()]


@pytest.mark.parametrize("klass", ["cheapest", "window", "window_cheapest"])
def test_oracle_scores_one_with_every_clause_met(env, klass):
    seed = seed_where(env, lambda s: s.klass == klass)
    score, info = run_scripted(env, "oracle", seed)
    assert score == 1.0
    assert info["reward_breakdown"] == {"chosen_option": 1.0, "searched_first": 1.0, "no_other_write": 1.0,
                                        "arguments_bound": 1.0, "confirmed_writes": 1.0}


def test_the_stated_constraints_single_out_the_chosen_flight(env):
    for seed in SEEDS:
        env.reset(seed=seed)
        opening, flights = env.scenario.opening, _options(env)
        window = re.search(r"departure time (before|after) (\d\d:\d\d:\d\d)", opening)
        meets = [f for f in flights if not window or
                 (f["scheduled_departure_time_est"] < window.group(2)) == (window.group(1) == "before")]
        if "lowest price" in opening:
            meets = [min(meets, key=lambda f: f["prices"]["economy"])]
        assert [f["flight_number"] for f in meets] == [env.scenario.bindings["chosen"]], seed
        assert (window is None) == (env.scenario.klass == "cheapest")


def test_another_option_scores_zero(env):
    for klass in ("cheapest", "window", "window_cheapest"):
        seed = seed_where(env, lambda s, k=klass: s.klass == k)
        for flight in [f["flight_number"] for f in _options(env)]:
            if flight != env.scenario.bindings["chosen"]:
                score, info = run_actions(env, _oracle_with(env, flight), seed)
                assert score == 0.0 and info["reward_breakdown"]["no_other_write"] == 0.0


def test_habits_succeed_only_on_a_minority(env):
    """Always the cheapest option is right exactly on the `cheapest` class; the first listed never is."""
    cheapest_right, first_right = [], []
    for seed in SEEDS:
        env.reset(seed=seed)
        flights = _options(env)
        cheapest = min(flights, key=lambda f: f["prices"]["economy"])["flight_number"]
        cheapest_right.append(run_actions(env, _oracle_with(env, cheapest), seed)[0] == 1.0)
        env.reset(seed=seed)
        first_right.append(run_actions(env, _oracle_with(env, _options(env)[0]["flight_number"]), seed)[0] == 1.0)
        env.reset(seed=seed)
        assert cheapest_right[-1] == (env.scenario.klass == "cheapest"), seed
    assert sum(cheapest_right) / len(SEEDS) <= 0.4
    assert not any(first_right)


def test_pasting_the_options_and_writing_every_option_score_zero(env):
    seed = seed_where(env, lambda s: s.klass == "window")
    read = call("get_reservation_details", reservation_id=env.scenario.bindings["target"])
    paste = "Here are the flights I found: " + json.dumps(_options(env)) + " Which one would you like?"
    assert run_actions(env, [read, _search(env), paste, "Have a nice day!"], seed)[0] == 0.0
    env.reset(seed=seed)
    write = json.loads(env.oracle_actions()[-2])
    every = [read, _search(env)] + [
        call(write["name"], **dict(write["arguments"], flights=[{"date": env.scenario.state["search_args"]["date"],
                                                                 "flight_number": f["flight_number"]}]))
        for f in _options(env)
    ]
    score, info = run_actions(env, every + ["Done. Have a nice day!"], seed)
    assert score == 0.0 and info["reward_breakdown"]["chosen_option"] == 1.0


def test_writing_the_right_flight_without_searching_first_loses_the_order_clause(env):
    score, info = run_scripted(env, "mutant", 0, mutant="drop_required_call")
    assert score == 0.75 and info["reward_breakdown"]["searched_first"] == 0.0


def test_search_answers_only_the_route_and_day_asked_and_the_write_shows(env):
    env.reset(seed=4)
    args = env.scenario.state["search_args"]
    assert [f["flight_number"] for f in json.loads(env.call_tool("search_direct_flight", args))] == \
        env.scenario.bindings["options"]
    assert json.loads(env.call_tool("search_direct_flight", dict(args, date="2024-05-29"))) == []
    assert all(f["origin"] == args["origin"] and f["destination"] == args["destination"] for f in _options(env))
    write = json.loads(env.oracle_actions()[-2])
    env.call_tool(write["name"], write["arguments"])
    target = env.scenario.bindings["target"]
    after = json.loads(env.call_tool("get_reservation_details", {"reservation_id": target}))
    assert after["flights"] == env.scenario.bindings["choice"]


def test_a_first_listed_agent_that_reads_the_conversation_scores_zero(env):
    """An agent acting on what it sees: reads, searches, confirms, then always writes the first flight listed."""

    def policy(e, rng, turn):
        opening = e.messages[1]["content"]
        if turn == 1:
            return call("get_reservation_details", reservation_id=re.search(r"reservation (\w{6})", opening).group(1))
        record = json.loads(e.messages[3]["content"])
        if turn == 2:
            o, d, day = re.search(r"origin (\w+), destination (\w+) and date ([\d-]+)", opening).groups()
            return call("search_direct_flight", origin=o, destination=d, date=day)
        first = json.loads(e.messages[5]["content"])[0]["flight_number"]
        day = json.loads(e.messages[4]["tool_calls"][0]["function"]["arguments"])["date"]
        args = {"reservation_id": record["reservation_id"], "cabin": record["cabin"],
                "flights": [{"date": day, "flight_number": first}],
                "payment_id": record["payment_history"][0]["payment_id"]}
        if turn == 3:
            return (f"I will update reservation flights for reservation id {args['reservation_id']} with "
                    f"{json.dumps(args)}. Do you confirm (yes/no)?")
        return call("update_reservation_flights", **args) if turn == 4 else "Done, have a nice day!"

    assert [run_policy(env, policy, seed)[0] for seed in SEEDS] == [0.0] * len(SEEDS)


def test_a_spec_whose_search_lists_no_real_options_is_refused():
    spec = load_specs(EXAMPLES / f"{NAME}.json")[0].model_dump(mode="json")
    search = next(t for t in spec["tools"] if t["name"] == "search_direct_flight")
    search["result_examples"], search["result_example"] = [], None
    with pytest.raises(ValueError, match="tools.search_direct_flight.result_examples list 0 options with a "
                                         "flight_number field"):
        CapabilitySpec.model_validate(spec)


def test_labels_on_planted_runs_follow_the_planted_deficit():
    runs = generate_planted(400, seed=5)
    prof = build_profile(runs)
    cand = next(c for c in propose_offline(prof, runs) if c.spec.family == "option_selection")
    assert cand.name == "pick_item_id_for_exchange_order_item"
    assert cand.spec.roles == {"write": "exchange_order_item", "read": "get_order_details", "key": "order_id",
                               "search": "search_variants", "arg": "new_item_id"}
    assert cand.spec.params == {"option_id": "item_id", "cost_field": "price", "window_field": "rating",
                                "cost_label": "price", "window_label": "rating"}
    counts = {"PRESENT": 0, "LACKING": 0, "NA": 0}
    for run in runs:
        lab = label_run(cand, run, prof.kinds)
        counts[lab] += 1
        truth = run.meta["planted"]
        if truth["task_kind"] != "exchange":
            assert lab == "NA"
        else:
            assert lab == ("LACKING" if "picks_first_option" in truth["deficits"] else "PRESENT")
    exchanges = sum(r.meta["planted"]["task_kind"] == "exchange" for r in runs)
    assert counts["PRESENT"] + counts["LACKING"] == exchanges and counts["LACKING"] > 10


def test_offline_mining_of_tau_bench_airline_proposes_option_selection():
    runs = load_runs([TAU_BENCH]).runs
    prof = build_profile(runs)
    cands = {c.name: c for c in propose_offline(prof, runs) if c.spec.family == "option_selection"}
    assert set(cands) == {"pick_flight_number_for_update_reservation_flights",
                          "pick_flight_number_for_book_reservation", "pick_listed_options"}
    flights = cands["pick_flight_number_for_update_reservation_flights"]
    assert flights.spec.params["cost_field"] == "prices.{cabin}"
    assert flights.spec.params["window_field"] == "scheduled_departure_time_est"
    assert len(flights.spec.tool("search_direct_flight").result_examples) == 50  # real option lists to build from

    def counts(cand):
        labels = [(label_run(cand, r, prof.kinds), r.success) for r in runs]
        return tuple(sum(lab == want and ok == passed for lab, ok in labels)
                     for want, passed in (("LACKING", False), ("PRESENT", False), ("LACKING", True), ("PRESENT", True)))

    # labelled from the departures: LACKING exactly where the write took another flight an earlier result listed
    # (a failed run whose other option was another argument's, a payment method or a cabin, is PRESENT for it)
    assert counts(flights) == (12, 15, 0, 13)
    # the candidate over every write also counts another payment method or another flight on a booking
    assert counts(cands["pick_listed_options"]) == (22, 43, 0, 27)
    by_id = {r.run_id: r for r in runs}
    # task 7, trial 0: the one-stop search listed HAT110 + HAT172; the agent changed the trip to HAT004 + HAT142
    assert label_run(flights, by_id["gpt-4o-airline/7/0"], prof.kinds) == "LACKING"


def test_a_search_for_something_else_is_no_search():
    """falsepass's field hedge: a search whose date says "(this is wrong)" returned nothing, and `searched_first` still
    paid for it (1.0, against 0.75 with no search). Only the search for what the user asked counts."""
    from trace_envs.generate.policies import run_actions

    env = committed_env("airline_pick_flight_meeting_constraints")()
    for seed in range(3):
        env.reset(seed=seed)
        oracle = env.oracle_actions()
        assert run_actions(env, oracle, seed)[0] == 1.0
        hedged = []
        for action in oracle:
            if action.startswith("{") and json.loads(action)["name"] == "search_direct_flight":
                found = json.loads(action)
                found["arguments"]["date"] += " (this is wrong)"
                action = json.dumps(found)
            hedged.append(action)
        score, info = run_actions(env, hedged, seed)
        assert info["reward_breakdown"]["searched_first"] == 0.0 and score == 0.75
