"""A plain (non-editable) install finds its templates and bundled envs: build the wheel, install it into a scratch
venv, make an env and generate one from a spec there."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_templates_and_envs(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(dist.glob("trace_envs-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("trace_envs/_templates/") and n.endswith(".py.j2") for n in names)
    assert any(n.startswith("trace_envs/_generated/") and n.endswith("/env.py") for n in names)

    scratch = tmp_path / "scratch"
    venv.create(scratch, with_pip=False)
    site = Path(
        subprocess.run(
            [str(scratch / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )
    # Dependencies come from this venv's site-packages; trace_envs itself only from the wheel (a pure-Python wheel
    # installs by unpacking; the editable install's .pth is not processed from a path added this way).
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    zipfile.ZipFile(wheel).extractall(site)
    spec = ROOT / "examples" / "specs" / "airline_check_cabin_before_cancel.json"
    code = f"""
import gymnasium as gym, trace_envs, pathlib
assert pathlib.Path(trace_envs.__file__).is_relative_to({str(site)!r}), trace_envs.__file__
env = gym.make('trace/airline_check_cabin_before_cancel')
obs, info = env.reset(seed=0)
from trace_envs.spec.io import load_specs
from trace_envs.generate.publish import generate_one
r = generate_one(load_specs({str(spec)!r})[0], pathlib.Path('out'))
assert r.published, r.error
print('ok', info['capability'])
"""
    out = subprocess.run(
        [str(scratch / "bin" / "python"), "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ok airline_check_cabin_before_cancel" in out.stdout
