"""Crash safety of `generate`: SIGKILL at random moments never leaves a half-written env.

A child process publishes one spec into a fixed folder again and again (alternating two versions of the spec, so every
publish really swaps content), or runs the real `trace-envs generate` command, and is killed at a random moment. After
each kill the env folder is absent (only before the first publish) or a complete env: env.py, spec.json and README.md,
byte-equal to what `generate` renders for one of the two versions, importable, with the same spec hash in env.py's SPEC and in
spec.json. Nothing visible is left beside it (staging folders are hidden, '.'-prefixed). Once published, the env never
disappears again. A rerun of `trace-envs generate` completes and publishes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trace_envs.atomic import HOST, STAGING_MARK
from trace_envs.envs_loader import import_module_from
from trace_envs.generate.publish import MODULE_FILE, README_FILE, SPEC_FILE, env_files, generate_one
from trace_envs.spec.io import load_specs

from _reliability import ROOT

SPEC_PATH = ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json"
TRIALS_LOOP = 8
TRIALS_CLI = 3

LOOP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from trace_envs.generate.publish import generate_one
    from trace_envs.spec.io import load_specs

    spec_path, variant_path, out, validate = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4] == "1"
    specs = [load_specs(spec_path)[0], load_specs(variant_path)[0]]
    print("ready", flush=True)
    i = 0
    while True:
        r = generate_one(specs[i % 2], out, validate=validate, seeds=2 if validate else None)
        assert r.published, r.error
        i += 1
    """
)
CLI = "import sys; from trace_envs.cli import main; sys.argv[0] = 'trace-envs'; print('ready', flush=True); main()"


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    if not SPEC_PATH.exists():
        pytest.skip("example spec missing")
    base = load_specs(SPEC_PATH)[0].with_hash()
    variant = base.model_copy(update={"description": base.description + " (variant for the crash test)"}).with_hash()
    folder = tmp_path_factory.mktemp("specs")
    variant_path = folder / "variant.json"
    variant_path.write_text(json.dumps(variant.model_dump(mode="json"), indent=2))
    return base, variant, variant_path


def _assert_consistent(out: Path, name: str, expected: dict[str, dict[str, str]], must_exist: bool) -> bool:
    """Check the state of `out` after a kill; returns whether the env folder exists."""
    entries = sorted(os.listdir(out)) if out.exists() else []
    visible = [e for e in entries if not e.startswith(".")]
    assert visible in ([], [name]), f"visible leftovers after a kill: {visible}"
    target = out / name
    if not target.exists():
        assert not must_exist, "a published env disappeared after a kill"
        return False
    files = sorted(p.name for p in target.iterdir() if p.name != "__pycache__")
    assert files == sorted([MODULE_FILE, SPEC_FILE, README_FILE]), f"incomplete env folder: {files}"
    spec_text = (target / SPEC_FILE).read_text()
    module_text = (target / MODULE_FILE).read_text()
    spec_hash = json.loads(spec_text)["spec_hash"]
    assert spec_hash in expected, "spec.json holds neither version of the spec"
    assert spec_text == expected[spec_hash][SPEC_FILE], "spec.json is not what generate renders (half-written?)"
    assert module_text == expected[spec_hash][MODULE_FILE], "env.py is not what generate renders (half-written?)"
    readme_text = (target / README_FILE).read_text()
    assert readme_text == expected[spec_hash][README_FILE], "README.md is not what generate renders (half-written?)"
    sys.dont_write_bytecode, old = True, sys.dont_write_bytecode
    try:
        module = import_module_from(target / MODULE_FILE)
    finally:
        sys.dont_write_bytecode = old
    assert module.SPEC.spec_hash == spec_hash, "env.py and spec.json disagree on the spec hash"
    assert module.SPEC.compute_hash() == spec_hash
    return True


def _published_files(spec, scratch: Path) -> dict[str, str]:
    """What a complete publish of `spec` holds: the rendered files plus the README written from the imported env."""
    folder = scratch / spec.spec_hash[:12]
    assert generate_one(spec, folder, validate=False).published
    files = env_files(spec)
    files[README_FILE] = (folder / spec.name / README_FILE).read_text()
    return files


def _kill_at_random(cmd: list[str], delay: float) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ready", proc.stderr.read()[-2000:]
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigkill_never_leaves_a_half_written_env(specs, tmp_path):
    base, variant, variant_path = specs
    expected = {s.spec_hash: _published_files(s, tmp_path / "reference") for s in (base, variant)}
    out = tmp_path / "out"
    rng = random.Random(int(os.environ.get("TRACE_ENVS_CRASH_SEED", time.time_ns() % 2**32)))
    published = False
    schedule = ["loop"] * TRIALS_LOOP + ["cli"] * TRIALS_CLI
    rng.shuffle(schedule)
    for kind in schedule:
        if kind == "loop":
            validate = rng.random() < 0.3
            cmd = [sys.executable, "-c", LOOP, str(SPEC_PATH), str(variant_path), str(out), "1" if validate else "0"]
            delay = rng.uniform(0.0, 0.6 if validate else 0.25)
        else:
            cmd = [sys.executable, "-c", CLI, "generate", str(rng.choice([SPEC_PATH, variant_path])), "-o", str(out)]
            delay = rng.uniform(0.0, 0.8)
        _kill_at_random(cmd, delay)
        published = _assert_consistent(out, base.name, expected, must_exist=published) or published

    # A rerun completes and publishes the spec it was given.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "generate", str(SPEC_PATH), "-o", str(out), "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["published"] is True
    assert _assert_consistent(out, base.name, expected, must_exist=True)
    assert json.loads((out / base.name / SPEC_FILE).read_text())["spec_hash"] == base.spec_hash


def test_published_env_is_readable_like_any_new_folder(specs, tmp_path):
    """The staging folder comes from mkdtemp (mode 0700); the published env must get the usual permissions."""
    base, _, _ = specs
    assert generate_one(base, tmp_path / "out", validate=False).published
    plain = tmp_path / "plain"
    plain.mkdir()
    assert (tmp_path / "out" / base.name).stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def _staging(out: Path) -> list[str]:
    return sorted(e for e in os.listdir(out) if STAGING_MARK in e)


def test_the_next_run_removes_the_staging_folder_a_kill_left(specs, tmp_path):
    """`kill -9` during validation leaves `.<env>.staging-<host>-<pid>-<random>`; the next `generate` into the folder
    removes it, and the other stale ones (another host's older than a day), but not a live process's, another host's
    recent one, nor a hidden folder that is not a staging one."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", CLI, "generate", str(SPEC_PATH), "-o", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (out.exists() and _staging(out)) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    killed = _staging(out)
    assert killed == [n for n in killed if n.startswith(f".{specs[0].name}{STAGING_MARK}{HOST}-{proc.pid}-")] != []

    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        live = out / f".other_env{STAGING_MARK}{HOST}-{sleeper.pid}-abc123"
        recent = out / f".other_env{STAGING_MARK}otherhost-{proc.pid}-abc123"
        old = out / f".other_env{STAGING_MARK}otherhost-{proc.pid}-def456"
        unrelated = [out / ".keep", out / f".{specs[0].name}.ab_cd1e2"]  # the latter like an older release's mkdtemp
        for folder in [live, recent, old, *unrelated]:
            folder.mkdir()
        two_days_ago = time.time() - 2 * 24 * 3600
        os.utime(old, (two_days_ago, two_days_ago))
        other = ROOT / "examples" / "specs" / "airline_total_paid_over_reservations.json"
        res = subprocess.run([sys.executable, "-c", CLI, "generate", str(other), "-o", str(out), "--no-validate"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        assert _staging(out) == sorted([live.name, recent.name])
        assert all(folder.exists() for folder in unrelated)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_swap_without_an_atomic_exchange_keeps_the_old_content_when_the_second_rename_fails(tmp_path, monkeypatch):
    """Where renameat2 is missing, the swap is two renames: if the second fails, the old env goes back in place."""
    import trace_envs.atomic as atomic

    target = tmp_path / "env"
    target.mkdir()
    (target / "spec.json").write_text("old")
    staging = atomic.staging_dir(target)
    (staging / "spec.json").write_text("new")
    monkeypatch.setattr(atomic.ctypes.util, "find_library", lambda name: None)
    real_rename, calls = os.rename, []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_rename(src, dst)

    monkeypatch.setattr(atomic.os, "rename", rename)
    with pytest.raises(OSError):
        atomic.swap_in(staging, target)
    assert (target / "spec.json").read_text() == "old"


POOL_LOOP = """
import os, sys, time
from trace_envs.generate.publish import pool_map

def work(x):
    print(os.getpid(), flush=True)
    time.sleep(60)

pool_map(work, [1, 2], workers=2)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its reaping is left


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_pool_workers_end_with_a_killed_parent():
    """`mine` and `generate` validate on forked workers: killed, they must not leave those waiting for ever."""
    proc = subprocess.Popen([sys.executable, "-c", POOL_LOOP], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    workers = [int(proc.stdout.readline()) for _ in range(2)]
    assert all(_alive(pid) for pid in workers)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)]
