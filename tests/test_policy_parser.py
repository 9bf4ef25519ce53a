"""The one reading of a policy's text (`trace_envs.evaluation.parse_policy`) and the one place a policy is built:
scripted kinds in the library, model-backed kinds by the training package through its seam."""

from __future__ import annotations

import pytest

from trace_envs.evaluation import EvalOptions, PolicyOptions, PolicySpec, ScriptedPolicy, build_policy, evaluate, parse_policy
from trace_envs.training import seam

ENV = "trace/airline_check_cabin_before_cancel"


@pytest.mark.parametrize("text, kind, target, base, attachment", [
    ("scripted:oracle", "scripted", "oracle", "oracle", None),
    ("scripted:random", "scripted", "random", "random", None),
    ("scripted:passive", "scripted", "passive", "passive", None),
    ("hf:tiny", "hf", "tiny", "tiny", None),
    ("hf:smollm2+adapters/cap", "hf", "smollm2+adapters/cap", "smollm2", "adapters/cap"),
    ("hf:Qwen/Qwen2.5-0.5B-Instruct", "hf", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("routed:tiny+runs/trace/adapters", "routed", "tiny+runs/trace/adapters", "tiny", "runs/trace/adapters"),
    ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", "gpt-4o-mini", None),
    ("openai:Qwen/Qwen3-8B:latest", "openai", "Qwen/Qwen3-8B:latest", "Qwen/Qwen3-8B:latest", None),
])
def test_every_kind_is_read(text, kind, target, base, attachment) -> None:
    spec = parse_policy(text)
    assert (spec.kind, spec.target, spec.base, spec.attachment, spec.text) == (kind, target, base, attachment, text)


@pytest.mark.parametrize("text, message", [
    ("bogus:x", "unknown policy 'bogus:x': use scripted:oracle|random|passive, hf:MODEL[+ADAPTER], "
                "routed:BASE+ADAPTERS_DIR or openai:MODEL"),
    ("oracle", "unknown policy 'oracle': use scripted:"),
    ("", "unknown policy '': use scripted:"),
    ("HF:tiny", "unknown policy 'HF:tiny'"),
    ("scripted:", "scripted policy must be one of oracle, random, passive, got ''"),
    ("scripted:expert", "scripted policy must be one of oracle, random, passive, got 'expert'"),
    ("hf:", "policy 'hf:': give hf:MODEL[+ADAPTER]"),
    ("hf:+adapters/cap", "policy 'hf:+adapters/cap': give hf:MODEL[+ADAPTER]"),
    ("hf:tiny+", "policy 'hf:tiny+': give hf:MODEL[+ADAPTER]"),
    ("routed:tiny", "routed policy needs routed:BASE+ADAPTERS_DIR, got routed:tiny"),
    ("routed:tiny+", "routed policy needs routed:BASE+ADAPTERS_DIR, got routed:tiny+"),
    ("routed:+adapters", "policy 'routed:+adapters': give routed:BASE+ADAPTERS_DIR"),
    ("openai:", "policy 'openai:': give openai:MODEL"),
])
def test_bad_text_is_refused_with_the_valid_forms(text, message) -> None:
    with pytest.raises(ValueError) as err:
        parse_policy(text)
    assert str(err.value).startswith(message)


def test_scripted_policies_are_built_in_the_library_without_any_training_package(monkeypatch) -> None:
    monkeypatch.setattr(seam, "_entry_points", lambda: [])
    policy = build_policy("scripted:random")
    assert isinstance(policy, ScriptedPolicy) and policy.name == "scripted:random"
    assert evaluate(ENV, "scripted:oracle", 2).success_rate == 1.0


class _Recorder:
    """A training package that only records what it is asked to build."""

    def __init__(self) -> None:
        self.asked: list[tuple[PolicySpec, PolicyOptions]] = []

    def model_policy(self, spec: PolicySpec, options: PolicyOptions) -> ScriptedPolicy:
        self.asked.append((spec, options))
        return ScriptedPolicy("oracle")


def test_model_kinds_are_built_by_the_training_package_with_the_options(monkeypatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr("trace_envs.training.training", lambda: recorder)
    for text in ("hf:tiny+adapters/x", "routed:tiny+adapters", "openai:gpt-4o-mini"):
        build_policy(text, PolicyOptions(temperature=0.7, max_new_tokens=32))
    assert [s.text for s, _ in recorder.asked] == ["hf:tiny+adapters/x", "routed:tiny+adapters", "openai:gpt-4o-mini"]
    assert all((o.temperature, o.max_new_tokens) == (0.7, 32) for _, o in recorder.asked)
    report = evaluate(ENV, "hf:tiny", 1, temperature=0.5, batch_size=4)
    assert isinstance(recorder.asked[-1][1], EvalOptions) and recorder.asked[-1][1].batch_size == 4
    assert report.episodes == 1


def test_evaluate_options_are_checked_by_their_model() -> None:
    with pytest.raises(ValueError, match="episodes"):
        evaluate(ENV, "scripted:oracle", 0)
    with pytest.raises(ValueError, match="no_such_option"):
        evaluate(ENV, "scripted:oracle", 1, no_such_option=3)
