"""A mistyped spec says what is wrong in a whole sentence: the field, the valid values, the closest one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trace_envs.spec.io import SpecError, parse_specs

ROOT = Path(__file__).resolve().parents[1]
SPEC = json.loads((ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json").read_text())
SPEC = SPEC[0] if isinstance(SPEC, list) else SPEC
TYPES = ("all_completed, arguments_bound, asked, call_made, communicated, confirmation, final_state, grounded, no_call "
         "and order")


def problems(change) -> list[str]:
    spec = copy.deepcopy(SPEC)
    change(spec["check"]["clauses"][0])
    with pytest.raises(SpecError) as err:
        parse_specs(spec, "spec.json")
    return err.value.errors


def test_clause_type_typo_names_the_field_and_the_valid_types():
    assert problems(lambda c: c.update(type="call_mde")) == [
        f".check.clauses[0].type: 'call_mde' is not a clause type; the valid clause types are {TYPES} "
        "(did you mean call_made?)."
    ]


@pytest.mark.parametrize("value,said", [(None, "no clause type given"), (["a", "b"], "a list of 2 items is not a clause type")])
def test_clause_type_of_the_wrong_kind(value, said):
    assert problems(lambda c: c.update(type=value)) == [
        f".check.clauses[0].type: {said}; the valid clause types are {TYPES}."
    ]


def test_clause_without_a_type():
    assert problems(lambda c: c.pop("type")) == [
        f".check.clauses[0].type: no valid clause type given; the valid clause types are {TYPES}."
    ]


def test_a_known_clause_type_reports_only_its_own_fields():
    """Not the other eight clause types' complaints, nor the whole clause printed."""
    assert problems(lambda c: c.update(min_count="two")) == [".check.clauses[0].min_count: 'two' is not of type 'integer'"]


def test_family_typo_names_the_closest_family():
    spec = copy.deepcopy(SPEC)
    spec["family"] = "precondition_befor_write"
    with pytest.raises(SpecError) as err:
        parse_specs(spec)
    (line,) = err.value.errors
    assert line.startswith(".family: 'precondition_befor_write' is not one of [")
    assert line.endswith("(did you mean precondition_before_write?)")


def test_cli_prints_the_sentence_whole(tmp_path):
    from trace_envs.cli import _load_commands, app

    _load_commands()
    spec = copy.deepcopy(SPEC)
    spec["check"]["clauses"][0]["type"] = "call_mde"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    res = CliRunner().invoke(app, ["generate", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {path}: invalid capability spec (1 error(s)):")
    assert res.stderr.rstrip().endswith(f"valid clause types are {TYPES} (did you mean call_made?).")
