"""Routing: the lexical router reaches 90% on planted tasks whose true capability is known; the model router scores
labelled options with a real (tiny) causal LM; `trace-envs route` prints the choice and the scores."""

from __future__ import annotations

import json

import pytest

from trace_envs.datasets.planted import generate_planted
from trace_envs.mining.pipeline import mine
from trace_envs.routing import (
    LexicalRouter,
    ModelRouter,
    RouteCandidate,
    RouterIndex,
    candidates_from_specs,
    load_index,
    options_prompt,
    save_index,
)
from trace_envs.routing.planted import planted_accuracy


@pytest.fixture(scope="module")
def mined():
    train = generate_planted(2000, 0)
    specs = mine(train).capabilities
    openings = {r.run_id: r.first_user_message() for r in train}
    return specs, candidates_from_specs(specs, openings)


def test_lexical_router_accuracy_on_planted_tasks(mined):
    specs, candidates = mined
    assert len(candidates) >= 6 and all(c.examples for c in candidates)
    assert planted_accuracy(LexicalRouter(candidates), specs, n_tasks=400, seed=77) >= 0.9


def test_lexical_router_is_deterministic_and_scores_are_posteriors(mined):
    _, candidates = mined
    router = LexicalRouter(candidates)
    text = "Hi, I'm Ava Kim, user id ava_kim_1234. The item in order #W1234567 arrived damaged, I want to file a claim."
    a, b = router.route(text), router.route(text)
    assert a == b and a.choice == "hand_off_with_transfer_to_human_agents"
    assert sum(a.scores.values()) == pytest.approx(1.0, abs=1e-3)


def test_min_score_routes_to_none():
    cands = [RouteCandidate(name="a", description="cancel order"), RouteCandidate(name="b", description="refund order")]
    assert LexicalRouter(cands, min_score=0.99).route("hello there").choice is None


def test_options_prompt_labels_every_candidate_plus_none():
    cands = [RouteCandidate(name=f"c{i}", description=f"skill {i}") for i in range(3)]
    prompt, labels = options_prompt(cands, "task text")
    assert labels == ["A", "B", "C", "D"] and "D. None of the above." in prompt and "task text" in prompt


def test_model_router_scores_options_with_a_tiny_model(mined):
    pytest.importorskip("torch")
    from adapters_train.models import build_tiny

    _, candidates = mined
    loaded = build_tiny()
    router = ModelRouter(candidates, loaded.model, loaded.tokenizer)
    decision = router.route("I'd like to cancel order #W1234567.")
    assert set(decision.scores) == {c.name for c in candidates} | {"none"}
    assert all(s <= 0.0 for s in decision.scores.values())  # log-probabilities
    assert decision.choice in {c.name for c in candidates} | {None}


def test_route_cli_prints_choice_and_scores(mined, tmp_path):
    from typer.testing import CliRunner

    from trace_envs.cli import _load_commands, app

    _, candidates = mined
    save_index(RouterIndex(candidates=candidates), tmp_path)
    assert load_index(tmp_path).candidates == candidates
    _load_commands()
    text = "Hi, I have a few things: I'd like to cancel order #W1 because it is no longer needed; and change my address"
    res = CliRunner().invoke(app, ["route", text, "--adapters", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["choice"] in {c.name for c in candidates} and set(out["scores"]) == {c.name for c in candidates}
    missing = CliRunner().invoke(app, ["route", "x", "--adapters", str(tmp_path / "nope")])
    assert missing.exit_code == 2


def test_none_class_sends_uncovered_tasks_to_the_base_model(mined):
    from trace_envs.routing import uncovered_openings

    specs, _ = mined
    train = generate_planted(2000, 0)
    openings = {r.run_id: r.first_user_message() for r in train}
    selected, others = specs[:2], specs[2:]
    index = RouterIndex(
        candidates=candidates_from_specs(selected, openings),
        none_examples=uncovered_openings(selected, others, openings),
    )
    assert index.none_examples
    router = index.router()
    assert "none" in router.route("Hi, I'd like to change my address to 1 Oak St, Austin, TX 78701.").scores
    assert planted_accuracy(router, selected, n_tasks=300, seed=5) >= 0.9
