"""The validation memo (TRACE_ENVS_VALIDATION_CACHE): a stored report is the one a fresh validation gives, and
anything the report depends on makes a new one."""

from __future__ import annotations

import json

from _family import example_spec

from trace_envs.generate.memo import ENV_VAR
from trace_envs.generate.publish import generate_one
from trace_envs.generate.validate import report_dict

NAME = "airline_check_cabin_before_cancel"


def _whole(report):
    return report_dict(report) | {"rewards": {k: p.rewards for k, p in report.probes.items()}}


def test_a_stored_report_is_the_fresh_one_and_a_changed_spec_or_size_is_validated_anew(tmp_path, monkeypatch):
    spec = example_spec(NAME)
    monkeypatch.delenv(ENV_VAR, raising=False)
    fresh = generate_one(spec, tmp_path / "fresh", seeds=5)
    memo = tmp_path / "memo"
    monkeypatch.setenv(ENV_VAR, str(memo))
    first = generate_one(spec, tmp_path / "a", seeds=5)
    assert len(list(memo.glob("*.json"))) == 1
    stored = next(memo.glob("*.json"))
    # the second validation reads what the first stored: a report planted in the file comes back
    planted = json.loads(stored.read_text()) | {"random": 0.125}
    stored.write_text(json.dumps(planted))
    second = generate_one(spec, tmp_path / "b", seeds=5)
    assert _whole(first.report) == _whole(fresh.report)
    assert second.report.random == 0.125 and second.published
    assert _whole(second.report) == _whole(fresh.report) | {"random": 0.125}
    # another size, another spec: each validated and stored apart
    generate_one(spec, tmp_path / "c", seeds=6)
    other = spec.model_copy(update={"knobs": spec.knobs.model_copy(update={"max_turns": spec.knobs.max_turns + 1})})
    generate_one(other, tmp_path / "d", seeds=5)
    assert len(list(memo.glob("*.json"))) == 3
    # a damaged file is validated again and rewritten
    stored.write_text("{not json")
    again = generate_one(spec, tmp_path / "e", seeds=5)
    assert _whole(again.report) == _whole(fresh.report)
    assert json.loads(stored.read_text())["random"] == fresh.report.random
