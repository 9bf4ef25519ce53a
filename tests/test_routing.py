"""Routing: the lexical router reaches 90% on planted tasks whose true capability is known; the model router scores
labelled options with a real (tiny) causal LM, calibrated against a content-free task; the retrieval router votes by
the nearest mined runs; the routed policy merges kept adapters with PEFT and plays an env through PEFT's Arrow;
`trace-envs route` prints the choice and the scores."""

from __future__ import annotations

import json

import pytest

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
def mined(planted_mining):
    train, result = planted_mining("retail", 0)
    specs = result.capabilities
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
    raw = router.raw_scores("I'd like to cancel order #W1234567.")
    assert all(s <= 0.0 for s in raw.values())  # log-probabilities
    assert decision.scores == {n: round(raw[n] - router.raw_scores("N/A")[n], 4) for n in raw}  # calibrated
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


def test_none_class_sends_uncovered_tasks_to_the_base_model(mined, planted_mining):
    from trace_envs.routing import uncovered_openings

    specs, _ = mined
    train = planted_mining("retail", 0)[0]
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


def _tiny_adapters(tmp_path, names):
    """One LoRA per name on the tiny model, with random (non-zero) B matrices so each changes the model, saved in
    PEFT's format with the card `load_index` reads."""
    import torch
    from peft import LoraConfig, get_peft_model

    from adapters_train.models import build_tiny

    out = []
    for i, name in enumerate(names):
        torch.manual_seed(i)
        model = get_peft_model(build_tiny().model, LoraConfig(r=4, target_modules="all-linear",
                                                              init_lora_weights=False))
        folder = tmp_path / name
        model.save_pretrained(str(folder))
        (folder / "trace_adapter.json").write_text(json.dumps({"env_id": f"trace/{name}", "capability": name}))
        out.append(RouteCandidate(name=name, description=f"{name.replace('_', ' ')}.", adapter=str(folder),
                                  examples=[f"Please {name.replace('_', ' ')} for order #W{i}{j}." for j in range(3)]))
    return out


def test_label_scores_are_per_token_means_and_calibrated_against_a_content_free_task():
    pytest.importorskip("torch")
    import torch

    from adapters_train.models import build_tiny
    from trace_envs.routing.scoring import embed, label_logprobs

    loaded = build_tiny()
    tok, model = loaded.tokenizer, loaded.model
    prompt, labels = "Which skill? Answer:", ["confirm", "hand off to a human agent"]
    got = label_logprobs(model, tok, prompt, labels)
    for label, score in zip(labels, got):  # the mean log-probability of the label's own tokens, one by one
        p_ids, l_ids = tok(prompt).input_ids, tok(label).input_ids
        ids = torch.tensor([p_ids + l_ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
        want = sum(float(logp[len(p_ids) - 1 + j, t]) for j, t in enumerate(l_ids)) / len(l_ids)
        assert score == pytest.approx(want, abs=1e-4)
    vecs = embed(model, tok, ["cancel my order", "cancel my order", "where is my parcel"])
    assert vecs.shape[0] == 3 and float(vecs[0] @ vecs[1]) == pytest.approx(1.0, abs=1e-5)
    assert float(vecs[0].norm()) == pytest.approx(1.0, abs=1e-5)
    # The model router subtracts each label's score on the content-free task, so that task itself ties every label.
    router = ModelRouter(_plain_candidates(), model, tok)
    flat = router.scores("N/A")
    assert max(flat.values()) - min(flat.values()) < 1e-6


def _plain_candidates():
    return [RouteCandidate(name="confirm_before_cancel", description="Get the user's yes before cancelling."),
            RouteCandidate(name="hand_off", description="Transfer to a human agent when the policy requires it.")]


def test_model_router_retrieval_router_keeps_neighbours_labels_with_merge_weights(mined):
    pytest.importorskip("torch")
    from adapters_train.models import build_tiny
    from trace_envs.routing import RetrievalRouter

    specs, candidates = mined
    loaded = build_tiny()
    router = RetrievalRouter(candidates, loaded.model, loaded.tokenizer, k=6, threshold=0.2)
    assert len(router.memory) >= len(candidates)
    text = candidates[0].examples[0]
    near = router.neighbours(text)
    assert len(near) == 6 and near[0][0] == pytest.approx(1.0, abs=1e-4)  # the run itself is nearest
    decision = router.route(text)
    assert set(decision.scores) <= {c.name for c in candidates} | {"base"} and "base" in decision.scores
    assert sum(decision.scores.values()) == pytest.approx(1.0, abs=1e-3)
    if decision.choice is not None:
        assert decision.weights and next(iter(decision.weights)) == decision.choice
        assert sum(decision.weights.values()) == pytest.approx(1.0, abs=1e-3)
        assert all(decision.scores[n] >= router.threshold for n in decision.weights)
    # By the neighbours' votes alone, retrieval beats chance by far even with a random tiny model's embeddings.
    router.lm_weight = 0.0
    from trace_envs.routing.planted import planted_tasks

    tasks = planted_tasks(specs, 60, seed=77)
    chance = sum(len(ok) for _, ok in tasks) / len(tasks) / (len(candidates) + 1)
    from trace_envs.routing import accuracy

    assert accuracy(router, tasks) >= 2 * chance


def test_routed_policy_merges_the_kept_adapters_with_peft_and_arrow_plays_an_env(tmp_path):
    pytest.importorskip("peft")
    import torch

    from adapters_train.evaluate import RoutedPolicy
    from _doubles import register_toy

    names = ["confirm_refund", "read_first"]
    save_index(RouterIndex(candidates=_tiny_adapters(tmp_path, names)), tmp_path)
    pol = RoutedPolicy(f"tiny+{tmp_path}", route_method="retrieval", max_new_tokens=4)
    merged = pol._merge({"confirm_refund": 0.7, "read_first": 0.3})
    model = pol.loaded.model
    assert merged in model.peft_config and pol._merge({"confirm_refund": 0.7, "read_first": 0.3}) == merged
    x = torch.tensor([[1, 2, 3, 4]])
    outs = {}
    for name in (*names, merged):
        model.set_adapter(name)
        outs[name] = model(input_ids=x).logits
    assert not torch.allclose(outs[merged], outs[names[0]]) and not torch.allclose(outs[merged], outs[names[1]])
    arrow = RoutedPolicy(f"tiny+{tmp_path}", route_method="arrow", max_new_tokens=4)
    assert "arrow_router" in arrow.loaded.model.peft_config and arrow.available == names
    results = arrow.rollouts(register_toy(), [0, 1], 1, max_turns=2)
    assert len(results) == 2 and {r.adapter for r in results} == {"arrow_router"}
