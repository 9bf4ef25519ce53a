"""The lane table in conftest.py names only tests that exist (a renamed test would silently change lanes), and every
test gets exactly one lane marker."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

from conftest import LANES, QUICK, SLOW, lane_of

TESTS = Path(__file__).resolve().parent


def _tests_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


@pytest.mark.parametrize("pattern", list(LANES))
def test_every_lane_pattern_names_a_test(pattern):
    files, _, name = pattern.partition("::")
    matched = [path for path in TESTS.glob("test_*.py") if fnmatch.fnmatchcase(path.name, files)]
    assert matched, f"{pattern}: no test file matches {files}"
    base = name.split("[", 1)[0]  # a parametrized id's brackets belong to the node id, not to the function's name
    assert any(fnmatch.fnmatchcase(test, base) for path in matched for test in _tests_in(path)), \
        f"{pattern}: no test function matches {name}"


def test_lanes_are_first_match_and_quick_by_default():
    assert set(LANES.values()) <= {SLOW, QUICK}
    assert lane_of("tests/test_pipeline.py::test_run_end_to_end_then_resume")[1] == SLOW
    assert lane_of("tests/test_pipeline.py::test_cpu_sizing_changes_only_what_the_user_left_unset")[1] == QUICK
    assert lane_of("tests/test_no_such_file.py::test_x") == (len(LANES), QUICK)


def test_the_quick_lane_plays_every_family():
    """The committed envs cover every family (test_registry_and_sync), and the quick lane plays each one's oracle and
    mutants on every seed."""
    for test in ("test_oracle_and_every_mutant_on_every_seed", "test_same_seed_same_episode"):
        assert lane_of(f"tests/test_family_contract.py::{test}[airline_check_cabin_before_cancel]")[1] == QUICK


def test_each_collected_test_has_one_lane(request):
    item = request.node
    assert {m.name for m in item.iter_markers()} & {SLOW, QUICK} == {QUICK}
