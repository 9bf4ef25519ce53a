"""Spec text can only ever become string literals in a generated module: names are slugs, text round-trips, nothing runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.publish import generate_one, safe_target
from trace_envs.generate.render import UnescapedValueError, environment, render_module
from trace_envs.spec.io import SpecError, load_specs, parse_specs
from trace_envs.spec.model import CapabilitySpec

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "specs" / "airline_check_cabin_before_cancel.json"

NASTY = (
    'He said "hi" and \'bye\' """ \'\'\' {{ 7*7 }} {% raw %} {# c #} \\ \\n \\x00 __import__("os").system("touch PWNED")\n'
    "second line\r\n\t tab \u2028 sep }}"
)


def base() -> dict:
    return json.loads(EXAMPLE.read_text())


@pytest.mark.parametrize(
    "bad_name",
    ["../../x", "a/b", "Name", "x y", 'a"b', "__import__('os')", "{{x}}", "a\nb", ".hidden", ""],
)
def test_bad_names_are_rejected(bad_name):
    data = base()
    data["name"] = bad_name
    with pytest.raises(SpecError) as err:
        parse_specs(data, "spec.json")
    assert ".name" in str(err.value) or "(root)" in str(err.value)


def test_safe_target_refuses_escape(tmp_path):
    with pytest.raises(ValueError, match="outside"):
        safe_target(tmp_path, "../x")


@pytest.mark.parametrize("field", ["description", "policy", "hint"])
def test_text_round_trips_and_nothing_runs(tmp_path, monkeypatch, field):
    monkeypatch.chdir(tmp_path)
    data = base()
    data[field] = NASTY
    spec = parse_specs(data)[0]
    source = render_module(spec)
    compile(source, "env.py", "exec")
    result = generate_one(spec, tmp_path / "gen")
    assert result.published, result.error
    module = import_module_from(tmp_path / "gen" / spec.name / "env.py")
    assert getattr(env_class(module).SPEC, field) == NASTY
    assert not (tmp_path / "PWNED").exists()


def test_tool_and_argument_names_must_be_identifiers():
    data = base()
    data["tools"][0]["name"] = "get_x(); import os"
    with pytest.raises(SpecError):
        parse_specs(data)
    data = base()
    data["tools"][0]["parameters"]["properties"] = {"a-b; c": {"type": "string"}}
    with pytest.raises((SpecError, ValidationError)):
        parse_specs(data)


def test_template_cannot_print_unescaped_values(tmp_path):
    (tmp_path / "bad.j2").write_text("x = {{ spec.description }}\n")
    env = environment(str(tmp_path))
    with pytest.raises(UnescapedValueError):
        env.get_template("bad.j2").render(spec=CapabilitySpec.model_validate(base()))


def test_untrusted_spec_file_lists_every_error(tmp_path):
    data = base()
    data["name"] = "Bad Name"
    data["family"] = "teleportation"
    data["knobs"]["entities"] = -1
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError) as err:
        load_specs(path)
    text = str(err.value)
    assert len(err.value.errors) >= 3
    assert ".name" in text and ".family" in text and ".knobs.entities" in text and str(path) in text


def test_oversized_and_deep_specs_are_rejected(tmp_path):
    data = base()
    data["description"] = "x" * 10_000
    with pytest.raises(SpecError, match="description"):
        parse_specs(data)
    deep: dict = {}
    node = deep
    for _ in range(100):
        node["a"] = {}
        node = node["a"]
    data = base()
    data["params"] = deep
    with pytest.raises(SpecError, match="nesting"):
        parse_specs(data)
    big = tmp_path / "big.json"
    big.write_text(" " * 6_000_000)
    with pytest.raises(SpecError, match="limit"):
        load_specs(big)
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": ')
    with pytest.raises(SpecError, match="line 1"):
        load_specs(bad)
