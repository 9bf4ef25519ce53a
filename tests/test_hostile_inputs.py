"""The CLI on inputs nobody here wrote (issue 20, part 4), each with the exact input that exposed the failure:

- 1 MB strings in a few call arguments of a real tau-bench log became the spec's example values, and `generate` then
  published none of the 4 mined envs (oracle 0.00 on half the seeds);
- a spec holding a 5000-digit integer, given to `generate` or (in an env's spec.json) to `check`, and an output folder
  that is a file, immutable, under /proc, or a dangling symbolic link (`generate -o`, `mine -o`) gave a traceback and
  exit 1;
- airline and retail mined apart both keep `complete_all_required_writes`; generated into one folder, the retail one
  silently replaced the airline one.

Each now ends in one `error:` line naming the path, exit 2, with nothing half-written (or publishes everything).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _reliability import DATA, ROOT, TAU_BENCH_FILE

SPEC = ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json"
TAU2_RESULTS = DATA / "tau2-bench" / "results"
MEGABYTE = 1_000_000
# The first two calls of each of these tools get a hostile first argument.
INJECTED_TOOLS = ("get_reservation_details", "cancel_reservation", "update_reservation_flights", "get_user_details")

needs_data = pytest.mark.skipif(not TAU_BENCH_FILE.exists(), reason="real data not found beside the repo")


def cli(*args: str | Path, env: dict[str, str] | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """`trace-envs ARGS` in a subprocess, as a user runs it (a traceback would show on its stderr)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "trace_envs.cli", *map(str, args)], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_error(res: subprocess.CompletedProcess, expected: str) -> None:
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert res.stderr.splitlines() == [f"error: {expected}"]


def inject(length: int, out: Path) -> Path:
    """A copy of the real tau-bench airline log whose first argument in the first two calls of each INJECTED_TOOLS
    is `length` characters of 'A'."""
    runs = json.loads(TAU_BENCH_FILE.read_text())
    left = dict.fromkeys(INJECTED_TOOLS, 2)
    for run in runs:
        for message in run["traj"]:
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                if left.get(fn["name"], 0) > 0:
                    args = json.loads(fn["arguments"])
                    args[next(iter(args))] = "A" * length
                    fn["arguments"] = json.dumps(args)
                    left[fn["name"]] -= 1
    assert not any(left.values())
    out.write_text(json.dumps(runs))
    return out


def _profile(path: Path):
    from trace_envs.trajectories.loaders import load_runs
    from trace_envs.trajectories.profile import build_profile

    return build_profile(load_runs([path]).runs)


@needs_data
@pytest.mark.parametrize("length", [MEGABYTE, 200])
def test_hostile_argument_values_never_become_examples(tmp_path, length):
    """A megabyte value is over the bound; a 200-character one is an outlier among 6-character ids. Either way the
    examples are the real ids the log also holds, the same as far as the log is the same."""
    hostile = _profile(inject(length, tmp_path / "airline.json"))
    clean = _profile(TAU_BENCH_FILE)
    for name in INJECTED_TOOLS:
        examples = hostile.tools[name].examples
        first = next(iter(examples))
        assert examples[first] and all("AAAA" not in str(v) for v in examples[first]), (name, examples[first])
        assert all(len(v) <= 25 for v in examples[first]), (name, examples[first])  # real ids: 6 to 25 characters
    # The clean log's JG7FMM and LQ940Q were the two calls overwritten; the next real ids take their place.
    assert clean.tools["get_reservation_details"].examples["reservation_id"] == ["JG7FMM", "LQ940Q", "2FBBAH"]
    assert hostile.tools["get_reservation_details"].examples["reservation_id"] == ["2FBBAH", "OI5L9G", "AQLBTL"]
    untouched = [n for n in clean.tools if n not in INJECTED_TOOLS]
    assert untouched and all(hostile.tools[n].examples == clean.tools[n].examples for n in untouched)


@needs_data
def test_a_spec_tool_takes_no_example_over_the_bound_from_any_profile():
    """A profile edited by hand or built by other code: the spec still shows no megabyte example."""
    from trace_envs.spec.from_profile import tool_spec

    profile = _profile(TAU_BENCH_FILE)
    profile.tools["cancel_reservation"].examples["reservation_id"] = ["A" * MEGABYTE, "GV1N64"]
    schema = tool_spec(profile, "cancel_reservation").parameters["properties"]["reservation_id"]
    assert schema["examples"] == ["GV1N64"]


@needs_data
def test_megabyte_arguments_still_mine_envs_that_all_publish(tmp_path):
    """Before: every kept capability failed validation (the oracle scored 0.00 on seeds 1, 3, 4, 6, 8)."""
    log = inject(MEGABYTE, tmp_path / "airline-1mb.json")
    mined = cli("mine", log, "-o", tmp_path / "mined", "-q")
    assert mined.returncode == 0, mined.stderr[-2000:]
    caps = json.loads((tmp_path / "mined" / "capabilities.json").read_text())
    assert len(caps) >= 4 and "AAAA" not in json.dumps(caps)
    res = cli("generate", tmp_path / "mined" / "capabilities.json", "-o", tmp_path / "envs", "--json")
    results = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.returncode == 0 and len(results) == len(caps), res.stderr[-2000:]
    assert all(r["published"] and r["report"]["oracle"] == 1.0 for r in results), [r["error"] for r in results]


def _big_integer_spec(path: Path, name: str | None = None) -> Path:
    """The bundled spec with `knobs.distractors` a 5000-digit integer (json's ValueError: Exceeds the limit (4300
    digits) for integer string conversion)."""
    spec = json.loads(SPEC.read_text())
    if name:
        spec["name"] = name
    text = json.dumps(spec, indent=2).replace('"distractors": 2', '"distractors": ' + "9" * 5000)
    assert text.count("9" * 5000) == 1
    path.write_text(text)
    return path


BIG_INTEGER = ".knobs.distractors: an integer of 5000 digits; the limit is 4300 digits"


def test_generate_refuses_a_5000_digit_integer(tmp_path):
    spec = _big_integer_spec(tmp_path / "spec.json")
    res = cli("generate", spec, "-o", tmp_path / "out", "--no-validate")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines() == [f"error: {spec}: invalid capability spec (1 error(s)):", f"  - {BIG_INTEGER}"]
    assert not (tmp_path / "out").exists()


def test_check_refuses_an_env_whose_spec_holds_a_5000_digit_integer(tmp_path):
    name = "hostile_big_integer"
    spec = _big_integer_spec(tmp_path / "spec.json", name)
    ok = json.loads(SPEC.read_text()) | {"name": name}
    (tmp_path / "ok.json").write_text(json.dumps(ok))
    assert cli("generate", tmp_path / "ok.json", "-o", tmp_path / "envs", "--no-validate").returncode == 0
    planted = tmp_path / "envs" / name / "spec.json"
    planted.write_text(spec.read_text())
    res = cli("check", name, env={"TRACE_ENVS_PATH": str(tmp_path / "envs")})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if not line.startswith(("  ", "/"))]  # not warnings
    assert errors == [f"error: {planted}: invalid capability spec (1 error(s)):"]
    assert f"  - {BIG_INTEGER}" in res.stderr.splitlines()


def _immutable(folder: Path) -> Path:
    folder.mkdir()
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this filesystem")
    return folder


def bad_output(kind: str, t: Path) -> tuple[Path, str]:
    """An output folder of `kind` made in `t`, and why the CLI must refuse it."""
    if kind == "a file":
        (t / "out.json").write_text("{}")
        return t / "out.json", "exists and is not a folder"
    if kind == "under a file":
        (t / "f").write_text("x")
        return t / "f" / "out", f"{t}/f is not a folder"
    if kind == "a dangling link":
        (t / "out").symlink_to(t / "gone")
        return t / "out", f"a symbolic link to {t}/gone, which does not exist"
    if kind == "under /proc":
        return Path("/proc/trace-envs-out"), "cannot create the folder in /proc: No such file or directory"
    return _immutable(t / "frozen"), "cannot write in the folder: Operation not permitted"


BAD_OUTPUTS = ["a file", "under a file", "a dangling link", "under /proc", "immutable"]


@pytest.fixture
def scratch(tmp_path):
    yield tmp_path
    subprocess.run(["chattr", "-i", str(tmp_path / "frozen")], capture_output=True)  # let pytest remove it


@pytest.mark.parametrize("command", ["generate", "mine"])
@pytest.mark.parametrize("kind", BAD_OUTPUTS)
def test_an_unusable_output_folder_is_one_error_line(scratch, command, kind):
    out, why = bad_output(kind, scratch)
    before = sorted(os.listdir(scratch))
    source = SPEC if command == "generate" else TAU_BENCH_FILE
    if not source.exists():
        pytest.skip("real data not found beside the repo")
    res = cli(command, source, "-o", out, *(["--no-validate"] if command == "generate" else ["-q"]))
    assert_one_error(res, f"--out {out}: {why}")
    assert sorted(os.listdir(scratch)) == before  # nothing made, not even the dangling link's target
    if kind == "immutable":
        assert os.listdir(out) == []


@pytest.fixture(scope="module")
def tau2_mined(tmp_path_factory):
    """tau2 airline and retail mined by two runs of `mine` (one `mine` of the folder would suffix the shared names with
    the domain): both keep complete_all_required_writes."""
    if not TAU2_RESULTS.exists():
        pytest.skip("real data not found beside the repo")
    out = tmp_path_factory.mktemp("tau2")
    for domain in ("airline", "retail"):
        res = cli("mine", TAU2_RESULTS, "--domain", domain, "-o", out / domain, "-q")
        assert res.returncode == 0, res.stderr[-2000:]
    return out


def _domain(env: Path) -> str:
    return json.loads((env / "spec.json").read_text())["domain"]


def test_generate_never_replaces_another_domains_env_unasked(tau2_mined, tmp_path):
    out = tmp_path / "envs"
    name = "complete_all_required_writes"
    airline, retail = tau2_mined / "airline" / "capabilities.json", tau2_mined / "retail" / "capabilities.json"
    assert name in {s["name"] for s in json.loads(airline.read_text())} & {s["name"] for s in json.loads(retail.read_text())}
    assert cli("generate", airline, "-o", out, "--no-validate").returncode == 0
    published = sorted(os.listdir(out))
    before = {p: (out / p / "env.py").read_text() for p in published}

    res = cli("generate", retail, "-o", out, "--no-validate")
    assert_one_error(res, f"{out / name} holds the airline env {name}; this spec is of domain retail: pass --replace "
                          "to replace it, or generate into another folder")
    assert sorted(os.listdir(out)) == published  # nothing generated, not even the retail envs without a clash
    assert {p: (out / p / "env.py").read_text() for p in published} == before

    res = cli("generate", retail, "-o", out, "--no-validate", "--replace")
    assert res.returncode == 0, res.stderr[-2000:]
    assert _domain(out / name) == "retail"
    again = cli("generate", retail, "-o", out, "--no-validate")  # the same domain's env is regenerated as ever
    assert again.returncode == 0, again.stderr[-2000:]


def test_generate_one_refuses_another_domains_env_unless_replace(tmp_path):
    from trace_envs.generate.publish import generate_one
    from trace_envs.spec.io import load_specs

    spec = load_specs(SPEC)[0]
    other = spec.model_copy(update={"domain": "retail"}).with_hash()
    assert generate_one(spec, tmp_path, validate=False).published
    refused = generate_one(other, tmp_path, validate=False)
    assert not refused.published and refused.error == (
        f"{tmp_path / spec.name} holds the airline env {spec.name}; this spec is of domain retail: not replaced "
        "without replace=True")
    assert _domain(tmp_path / spec.name) == "airline"
    assert generate_one(other, tmp_path, validate=False, replace=True).published
    assert _domain(tmp_path / spec.name) == "retail"
