"""Evaluation and calibration: scripted policies on generated envs through the CLI, pass@k, verdicts, model policies."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
gym = pytest.importorskip("gymnasium")

from _doubles import TOY_ENV_ID, register_toy  # noqa: E402

import trace_envs  # noqa: E402,F401
from adapters_train.calibrate import summarize_groups, verdict_for  # noqa: E402
from adapters_train.evaluate import OpenAIPolicy  # noqa: E402
from trace_envs.evaluation import EpisodeResult, evaluate, pass_at_k  # noqa: E402
from trace_envs.generate.policies import random_value  # noqa: E402

register_toy()
GENERATED = sorted(k for k in gym.registry if k.startswith("trace/"))
ENVS = GENERATED or [TOY_ENV_ID]


def _cli(*args: str):
    from typer.testing import CliRunner

    from trace_envs.cli import _load_commands, app

    _load_commands()
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("env_id", ENVS)
def test_cli_eval_oracle_succeeds_and_random_fails(env_id: str) -> None:
    res = _cli("eval", env_id, "--policy", "scripted:oracle", "--episodes", "20", "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["success_rate"] == 1.0 and report["mean_reward"] == 1.0 and report["pass_at"]["pass@1"] == 1.0
    assert report["clauses"]
    res = _cli("eval", env_id, "--policy", "scripted:random", "--episodes", "20", "--json")
    assert json.loads(res.stdout)["mean_reward"] < 0.2
    res = _cli("eval", env_id, "--policy", "scripted:passive", "--episodes", "10")
    assert res.exit_code == 0 and "success_rate: 0.000" in res.stdout


def test_eval_is_deterministic_on_fixed_seeds_and_offsets() -> None:
    a = evaluate(TOY_ENV_ID, "scripted:random", 10, samples=2, seed_offset=5)
    b = evaluate(TOY_ENV_ID, "scripted:random", 10, samples=2, seed_offset=5)
    assert [r.reward for r in a.results] == [r.reward for r in b.results]
    assert sorted({r.seed for r in a.results}) == list(range(5, 15))
    assert set(a.pass_at) == {"pass@1", "pass@2"}


def test_pass_at_k_unbiased() -> None:
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 4) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(16, 2, 8) == pytest.approx(1 - (14 * 13 * 12 * 11 * 10 * 9 * 8 * 7) / (16 * 15 * 14 * 13 * 12 * 11 * 10 * 9))
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 4)


def test_random_values_have_the_schema_types() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(50):
        assert isinstance(random_value({"type": "integer"}, rng), int)
        assert isinstance(random_value({"type": "number"}, rng), float)
        assert isinstance(random_value({"type": "boolean"}, rng), bool)
        assert random_value({"type": "string", "enum": ["x", "y"]}, rng) in ("x", "y")
        assert all(isinstance(v, str) for v in random_value({"type": "array", "items": {"type": "string"}}, rng))


def _group(seed: int, rewards: list[float]) -> list[EpisodeResult]:
    return [EpisodeResult(seed, j, r, r == 1.0) for j, r in enumerate(rewards)]


def test_calibration_statistics_and_verdicts() -> None:
    results = _group(0, [1, 1, 1, 1]) + _group(1, [0, 0, 0, 0]) + _group(2, [1, 0, 0.5, 0]) + _group(3, [0.5] * 4)
    rep = summarize_groups("trace/x", "p", results, 4)
    assert rep.share_all_success == 0.25 and rep.share_all_zero == 0.25
    assert rep.share_constant == 0.75 and rep.share_informative == 0.25
    assert rep.pass_at["pass@1"] == pytest.approx((1 + 0 + 0.25 + 0) / 4)
    assert rep.verdict == "trainable"
    assert verdict_for(1.0, 0.0, 1.0, 0.0)[0] == "too easy" and "difficulty" in verdict_for(1.0, 0.0, 1.0, 0.0)[1]
    assert verdict_for(0.0, 0.0, 0.0, 1.0)[0] == "too hard" and "hint_rate" in verdict_for(0.0, 0.0, 0.0, 1.0)[1]


def test_cli_calibrate_scripted() -> None:
    res = _cli("calibrate", ENVS[0], "--policy", "scripted:random", "--groups", "3", "--k", "4", "--json")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["verdict"] == "too hard" and rep["share_all_zero"] == 1.0 and "pass@4" in rep["pass_at"]
    res = _cli("calibrate", ENVS[0], "--policy", "scripted:oracle", "--groups", "2", "--k", "2")
    assert "verdict: too easy" in res.stdout
    # the model policies' budget options are accepted (a scripted policy plays the same)
    res = _cli("calibrate", ENVS[0], "--policy", "scripted:oracle", "--groups", "1", "--k", "2", "--max-turns", "6",
               "--max-new-tokens", "128")
    assert res.exit_code == 0 and "verdict: too easy" in res.stdout, res.output


def test_calibration_hands_its_turn_budget_to_the_model_policys_rollouts() -> None:
    pytest.importorskip("trl")
    from adapters_train.calibrate import calibrate
    from trace_envs.evaluation import PolicyOptions, build_policy

    pol = build_policy("hf:tiny", PolicyOptions(temperature=1.0, max_new_tokens=8))
    asked = []
    rollouts = pol.rollouts
    pol.rollouts = lambda *a, **kw: asked.append(kw) or rollouts(*a, **kw)
    rep = calibrate(TOY_ENV_ID, pol, groups=2, k=2, max_turns=1, hint_fraction=0.5)
    assert asked == [{"max_turns": 1, "hinted": 1}] and rep.groups == 2


def test_hf_tiny_policy_runs_through_the_bridge() -> None:
    pytest.importorskip("trl")
    rep = evaluate(TOY_ENV_ID, "hf:tiny", 2, samples=2, temperature=1.0, max_new_tokens=16)
    assert len(rep.results) == 4 and 0.0 <= rep.mean_reward <= 1.0
    assert rep.policy == "hf:tiny"
    for r in rep.results:  # what a transcript shows: the prompt, then every turn the model took
        assert [m["role"] for m in r.messages[:2]] == ["system", "user"] and r.messages[2]["role"] == "assistant"
        assert set(r.breakdown) <= set(r.reasons)


def test_hf_tiny_policy_calibrates_hinted_and_plain_rollouts_apart() -> None:
    pytest.importorskip("trl")
    import gymnasium as gym

    from adapters_train.calibrate import calibrate
    from trace_envs.evaluation import PolicyOptions, build_policy

    hint = gym.make(TOY_ENV_ID).unwrapped.hint_text
    pol = build_policy("hf:tiny", PolicyOptions(temperature=1.0, max_new_tokens=8))
    results = pol.rollouts(TOY_ENV_ID, [0], 4, hinted=2)
    assert [r.hinted for r in results] == [True, True, False, False]
    assert [hint in r.messages[0]["content"] for r in results] == [True, True, False, False]
    rep = calibrate(TOY_ENV_ID, pol, groups=2, k=4, hint_fraction=0.5)
    assert rep.hinted_per_group == 2 and rep.success_hinted is not None and rep.success_plain is not None
    assert rep.suggested_hint_fraction in (0.0, 0.25, 0.375, 0.5)
    assert "success_hinted:" in rep.format() and "suggested_hint_fraction:" in rep.format()


def test_a_model_call_with_arguments_its_tool_does_not_take_is_an_error_result_not_a_crash() -> None:
    """A sampled model writes `send_message_to_user` without its `message`, or with an argument it does not take: the call's
    result is the error (as TRL's rollout loop makes it) and the episode goes on and is scored."""
    pytest.importorskip("trl")
    from adapters_train.evaluate import ChatPolicy

    class Scripted(ChatPolicy):
        name = "scripted-chat"
        turns = [
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "send_message_to_user", "arguments": {}}}]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "send_message_to_user", "arguments": {"message": "Hi", "tone": "warm"}}}]},
            {"role": "assistant", "content": "Goodbye."},
        ]

        def respond(self, conversations, tools):
            return [self.turns[sum(m["role"] == "assistant" for m in conv)] for conv in conversations]

    (result,) = Scripted().rollouts(TOY_ENV_ID, [0], 1)
    tool_results = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert len(tool_results) == 2 and result.turns == 3 and result.reward == 0.0
    assert "'message'" in json.loads(tool_results[0])["error"]
    assert "'tone'" in json.loads(tool_results[1])["error"]


def test_calibration_splits_hinted_and_plain_rollouts() -> None:
    from adapters_train.calibrate import suggest_hint_fraction

    results = _group(0, [1, 0, 0, 0]) + _group(1, [1, 1, 0, 0])
    for r in results:
        r.hinted = r.sample < 2
    rep = summarize_groups("trace/x", "p", results, 4, hint_fraction=0.5)
    assert rep.hinted_per_group == 2 and rep.success_hinted == 0.75 and rep.success_plain == 0.0
    assert rep.share_informative == 1.0 and rep.share_informative_plain == 0.0  # the hints make every group count
    assert rep.suggested_hint_fraction == 0.25
    assert suggest_hint_fraction(0.1, 0.0) == 0.5 and suggest_hint_fraction(0.9, 0.75) == 0.0
    assert suggest_hint_fraction(0.1, 0.0, success_plain=0.0) == 0.5
    assert summarize_groups("trace/x", "p", results, 4).suggested_hint_fraction is None
    assert "hint_note" not in rep.format()


def test_calibration_suggests_no_hint_where_hinted_rollouts_do_no_better_than_plain_ones() -> None:
    """What SmolLM2-135M did on the hand-off env after its warm start: hinted rollouts 0 of 16, plain 2 of 16, one
    group in four varied. More hints would only make more groups all zero."""
    results = []
    for seed in range(8):
        group = _group(seed, [0, 0, 0, 1 if seed in (4, 7) else 0])
        for r in group:
            r.hinted = r.sample < 2
        results += group
    rep = summarize_groups("trace/x", "p", results, 4, hint_fraction=0.5)
    assert rep.success_hinted == 0.0 and rep.success_plain == 0.125 and rep.share_informative_plain == 0.25
    assert rep.suggested_hint_fraction == 0.0
    assert "hint_note: hinted rollouts did no better than plain ones" in rep.format()
    # the base model, which writes no tool call hinted or not: no share of hints helps it either
    zero = [r for seed in range(2) for r in _group(seed, [0, 0, 0, 0])]
    for r in zero:
        r.hinted = r.sample < 2
    assert summarize_groups("trace/x", "p", zero, 4, hint_fraction=0.5).suggested_hint_fraction == 0.0


def test_unknown_policy_is_a_clear_error() -> None:
    res = _cli("eval", TOY_ENV_ID, "--policy", "bogus:x", "--episodes", "1")
    assert res.exit_code == 2 and "unknown policy" in res.output


def test_openai_message_conversion() -> None:
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "tool", "name": "f", "content": "ok"},
    ]
    out = OpenAIPolicy._to_openai(msgs)
    call = out[1]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"a": 1}' and out[2]["tool_call_id"] == call["id"]
    assert "name" not in out[2] and out[1]["content"] is None


def test_routed_policy_switches_adapters_per_episode_and_reports_them(tmp_path) -> None:
    """Two adapters in one PEFT model; the router picks per episode; each result names the adapter it used."""
    from peft import LoraConfig, get_peft_model

    from adapters_train.models import build_tiny, save_adapter
    from trace_envs.routing import RouteCandidate, RouterIndex, save_index

    env_id = "trace/airline_check_cabin_before_cancel"
    names = ["cancel_capability", "baggage_capability"]
    for name in names:
        loaded = build_tiny()
        peft = get_peft_model(loaded.model, LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
        save_adapter(peft, loaded.tokenizer, tmp_path / name, {"env_id": env_id, "capability": name, "base_model": "tiny"})
    save_index(
        RouterIndex(
            candidates=[
                RouteCandidate(name=names[0], description="cancel a reservation", examples=["cancel the reservation"],
                               adapter=str(tmp_path / names[0])),
                RouteCandidate(name=names[1], description="update baggage", examples=["add bags to my trip"],
                               adapter=str(tmp_path / names[1])),
            ]
        ),
        tmp_path,
    )
    report = evaluate(env_id, f"routed:tiny+{tmp_path}", episodes=2, max_new_tokens=8)
    assert [r.adapter for r in report.results] == [names[0], names[0]]  # the env's openings ask to cancel
    assert report.to_dict()["adapters"] == {str(r.seed): names[0] for r in report.results}
    assert "adapters used: cancel_capability x2" in report.format()


def test_unknown_env_is_one_error_line_naming_where_it_looked() -> None:
    res = _cli("eval", "no_such_capability", "--policy", "scripted:oracle", "--episodes", "1")
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: unknown env 'trace/no_such_capability'")
    assert "Looked in:" in lines[0] and "TRACE_ENVS_PATH" in lines[0]


def test_transcripts_round_trip_from_eval_to_show(tmp_path) -> None:
    """eval --transcripts writes one line per episode holding exactly what the oracle did; show renders one of them."""
    from trace_envs.runtime import parse_action
    from trace_envs.transcripts import read_transcripts

    env_id, path = ENVS[0], tmp_path / "oracle.jsonl"
    res = _cli("eval", env_id, "--policy", "scripted:oracle", "--episodes", "3", "--seed-offset", "40",
               "--transcripts", str(path))
    assert res.exit_code == 0, res.output
    records = read_transcripts(path)
    assert [(r["seed"], r["sample"], r["reward"], r["passed"]) for r in records] == [(s, 0, 1.0, True) for s in (40, 41, 42)]
    env = gym.make(env_id).unwrapped
    for record in records:
        env.reset(seed=record["seed"])
        planned = [c for a in env.oracle_actions() for c in parse_action(a).calls]
        assert [(c["name"], c["arguments"]) for c in record["tool_calls"]] == [(c.name, c.arguments) for c in planned]
        assert all(c["result"] is not None for c in record["tool_calls"])
        assert record["messages"][0] == {"role": "system", "content": env.system_prompt}
        assert record["messages"][1] == {"role": "user", "content": env.opening}
        assert set(record["reward_breakdown"]) <= set(record["reasons"]) and all(record["reward_breakdown"].values())

    shown = _cli("show", str(path), "--episode", "1")
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    env.reset(seed=41)
    assert f"episode 1 of 3 in {path}" in text and "seed 41" in text and "reward 1.000 (passed)" in text
    assert f"user: {env.opening}" in text
    for call in records[1]["tool_calls"]:
        assert f"agent -> {call['name']}(" in text
    for clause in records[1]["reward_breakdown"]:
        assert f"  {clause}: 1.00  ({records[1]['reasons'][clause]})" in text
    assert _cli("show", str(path), "--seed", "42").stdout.startswith("episode 2 of 3")


def test_show_names_the_file_and_line_of_a_broken_transcript(tmp_path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"messages": []}\nnot json\n')
    res = _cli("show", str(path))
    assert res.exit_code == 2 and f"error: {path}:2: not JSON" in res.output
    path.write_text('{"messages": []}\n')
    res = _cli("show", str(path), "--episode", "5")
    assert res.exit_code == 2 and "--episode must be in 0..0, got 5" in res.output


def test_scripted_eval_imports_neither_the_training_layer_nor_torch(tmp_path) -> None:
    """Scripted evaluation works on a core install (no `train` extra): the CLI path never imports adapters_train."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from trace_envs.cli import _load_commands, app\n"
        "_load_commands()\n"
        f"res = CliRunner().invoke(app, ['eval', {ENVS[0]!r}, '--policy', 'scripted:oracle', '--episodes', '2', "
        f"'--transcripts', {str(tmp_path / 't.jsonl')!r}])\n"
        "assert res.exit_code == 0, res.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('adapters_train', 'torch', 'transformers', 'trl')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_transcripts_into_a_pipe_write_into_it_and_never_replace_it(tmp_path) -> None:
    """`--transcripts /dev/stdout` or a named pipe is written into; the atomic rename is for files only."""
    import stat
    import threading

    from trace_envs.evaluation import evaluate as evaluate_scripted
    from trace_envs.transcripts import write_transcripts

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert write_transcripts(evaluate_scripted(ENVS[0], "scripted:oracle", 2), fifo) == 2
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and [json.loads(line)["seed"] for line in got[0].splitlines()] == [
        1_000_000, 1_000_001]
