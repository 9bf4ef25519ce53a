"""Registration of generated envs, committed envs in sync with their templates, the schema file in sync with the model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import trace_envs
from trace_envs.generate.publish import generate_one
from trace_envs.registry import DuplicateEnvWarning, discover, register_all, resolve_env_id
from trace_envs.spec.io import SCHEMA_PATH, json_schema, load_specs

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
COMMITTED = sorted(p.parent.name for p in GENERATED.glob("*/env.py"))


def test_committed_envs_cover_every_registered_family():
    from trace_envs.families import all_tasks

    families = {json.loads((GENERATED / n / "spec.json").read_text())["family"] for n in COMMITTED}
    assert families == set(all_tasks())


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_env_matches_its_template(name, tmp_path):
    """Regenerate each committed env from its committed spec: env.py, spec.json and README.md must be byte-identical."""
    spec = load_specs(GENERATED / name / "spec.json")[0]
    result = generate_one(spec, tmp_path, validate=False)
    assert result.published, result.error
    for filename in ("env.py", "spec.json", "README.md"):
        fresh = (tmp_path / name / filename).read_text()
        on_disk = (GENERATED / name / filename).read_text()
        assert on_disk == fresh, f"generated/{name}/{filename} is stale: run `make regenerate`"


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_env_has_an_example_spec(name):
    example = ROOT / "examples" / "specs" / f"{name}.json"
    assert example.exists()
    assert load_specs(example)[0].spec_hash == load_specs(GENERATED / name / "spec.json")[0].spec_hash


def test_schema_file_matches_the_model():
    assert json.loads(SCHEMA_PATH.read_text()) == json_schema()


@pytest.mark.parametrize("name", COMMITTED)
def test_gym_make_reset_is_deterministic(name):
    env = gym.make(f"trace/{name}")
    a = env.reset(seed=0)
    b = env.reset(seed=0)
    assert a[0] == b[0] and a[1]["messages"] == b[1]["messages"]


def test_make_without_import_in_a_fresh_process(tmp_path):
    code = (
        "import gymnasium as gym; e = gym.make('trace_envs:trace/airline_check_cabin_before_cancel'); "
        "print(e.reset(seed=0)[0])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert "reservation" in out.stdout


def test_trace_envs_path_and_cwd_generated_are_registered(tmp_path, monkeypatch):
    spec = load_specs(ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json")[0]
    renamed = spec.model_copy(update={"name": "my_custom_env"}).with_hash()
    assert generate_one(renamed, tmp_path / "mine").published
    monkeypatch.setenv("TRACE_ENVS_PATH", str(tmp_path / "mine"))
    assert "trace/my_custom_env" in register_all()
    env = gym.make("trace/my_custom_env")
    assert env.reset(seed=0)[1]["capability"] == "my_custom_env"
    monkeypatch.delenv("TRACE_ENVS_PATH")
    assert "my_custom_env" not in discover()


def test_an_env_id_resolves_from_its_bare_name_and_an_unknown_one_says_where_it_looked(tmp_path, monkeypatch):
    name = COMMITTED[0]
    assert resolve_env_id(name) == resolve_env_id(f"trace/{name}") == f"trace/{name}"
    monkeypatch.setenv("TRACE_ENVS_PATH", str(tmp_path / "nowhere"))
    with pytest.raises(gym.error.NameNotFound) as caught:
        resolve_env_id(name[:-1])
    message = str(caught.value)
    assert f"unknown env 'trace/{name[:-1]}' (did you mean trace/{name}" in message
    assert str(GENERATED) in message and f"{tmp_path / 'nowhere'} (missing)" in message
    assert "TRACE_ENVS_PATH=DIR" in message and "./generated" in message


def test_an_env_folder_added_after_import_is_found_by_resolve(tmp_path, monkeypatch):
    shutil.copytree(GENERATED / COMMITTED[0], tmp_path / "envs" / "late_env")
    monkeypatch.setenv("TRACE_ENVS_PATH", str(tmp_path / "envs"))
    try:
        assert resolve_env_id("late_env") == "trace/late_env"
    finally:
        gym.registry.pop("trace/late_env", None)


def test_the_same_env_name_in_two_folders_warns_naming_both(tmp_path, monkeypatch):
    for folder in ("first", "second"):
        shutil.copytree(GENERATED / COMMITTED[0], tmp_path / folder / "twin_env")
    first, second = tmp_path / "first" / "twin_env" / "env.py", tmp_path / "second" / "twin_env" / "env.py"
    monkeypatch.setenv("TRACE_ENVS_PATH", os.pathsep.join([str(tmp_path / "first"), str(tmp_path / "second")]))
    try:
        with pytest.warns(DuplicateEnvWarning) as record:
            found = discover()
        assert found["twin_env"] == second  # the later folder wins, as documented
        assert [str(w.message) for w in record] == [f"env trace/twin_env is defined twice: {first} and {second}; using {second}"]
    finally:
        gym.registry.pop("trace/twin_env", None)


def test_async_vector_env_steps():
    envs = gym.make_vec(f"trace/{COMMITTED[0]}", num_envs=2, vectorization_mode="async")
    try:
        obs, info = envs.reset(seed=[0, 1])
        assert len(obs) == 2
        obs, reward, term, trunc, info = envs.step(["Hello there.", '{"name": "nope", "arguments": {}}'])
        assert len(reward) == 2
    finally:
        envs.close()


def test_package_version():
    assert trace_envs.__version__
