"""How validation bounds a content-free probe that turns out to be a constant decision."""

from __future__ import annotations

from trace_envs.generate.validate import PROBE_CEILING, ProbeReport, _as_constant_decisions


def _report(kind: str, rewards: list[float]) -> ProbeReport:
    mean = sum(rewards) / len(rewards)
    return ProbeReport(kind=kind, mean=mean, success=sum(r == 1.0 for r in rewards) / len(rewards), bound="",
                       rewards=rewards)


def _problem(name: str, report: ProbeReport) -> str:
    return f"probe {name} (calls every tool on every id, then claims success) averages {report.mean:.3f} >= {PROBE_CEILING}"


def test_spraying_the_one_id_is_held_to_always_writes_bound():
    """One read, one write, one id: spraying every tool is reading then writing, and earns what always writing earns
    on each seed; it passes where the classes are balanced, as always_write does."""
    always = _report("decision", [1.0, 0.0, 1.0, 0.0])
    spray = _report("content_free", [1.0, 0.0, 1.0, 0.0])
    problems = [_problem("spray_calls", spray), "something else"]
    _as_constant_decisions({"spray_calls": spray, "always_write": always}, problems, 0.5)
    assert problems == ["something else"]
    assert spray.kind == "decision" and "always_write" in spray.bound


def test_a_probe_earning_more_than_the_constant_decision_on_a_seed_still_fails():
    always = _report("decision", [1.0, 0.0, 1.0, 0.0])
    spray = _report("content_free", [1.0, 0.5, 1.0, 0.0])
    problems = [_problem("spray_calls", spray)]
    _as_constant_decisions({"spray_calls": spray, "always_write": always}, problems, 0.5)
    assert problems == [_problem("spray_calls", spray)] and spray.kind == "content_free"


def test_the_decision_bound_still_holds():
    """Held to the decision bound, a probe that succeeds on more seeds than the largest class fails as a decision."""
    always = _report("decision", [1.0, 1.0, 1.0, 0.0])
    spray = _report("content_free", [1.0, 1.0, 1.0, 0.0])
    problems = [_problem("spray_calls", spray)]
    _as_constant_decisions({"spray_calls": spray, "always_write": always}, problems, 0.5)
    assert len(problems) == 1 and "a constant decision should not pay" in problems[0]


def test_rewards_stay_out_of_the_report_json():
    assert "rewards" not in _report("decision", [1.0]).model_dump()
