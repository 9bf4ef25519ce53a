"""The two planted-deficit domains written outside this project (../shared/external-domains), mined as a user would,
with their expected actions and with every run's expected actions removed (as users' own logs come): the deficits
each recovers by the family that teaches it, scored by the domains' own score.py, and nothing kept for the decoy or
the noise (issue 25's floors: library >= 4 of 5, utility >= 3 of 4, in both variants)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trace_envs.cli import _load_commands, app

_load_commands()

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external-domains"
pytestmark = pytest.mark.skipif(not EXTERNAL.exists(), reason="../shared/external-domains not found beside the repo")
FLOORS = {"library": 4, "utility": 3}


def _without_expected(path: Path, out: Path) -> Path:
    runs = json.loads(path.read_text())
    for run in runs:
        (run.get("info") or {}).get("task", {}).pop("actions", None)
    out.write_text(json.dumps(runs))
    return out


@pytest.mark.parametrize("expected", ["with", "without"])
@pytest.mark.parametrize("domain", sorted(FLOORS))
def test_external_domain_deficits_recovered(domain, expected, tmp_path):
    runs = tmp_path / f"{domain}.json"
    subprocess.run([sys.executable, str(EXTERNAL / f"{domain}_sim.py"), str(runs)], check=True, capture_output=True)
    if expected == "without":
        runs = _without_expected(runs, tmp_path / f"{domain}_bare.json")
        assert "actions" not in json.loads(runs.read_text())[0]["info"]["task"]
    out = tmp_path / "mined"
    res = CliRunner().invoke(app, ["mine", str(runs), "-o", str(out), "--offline"])
    assert res.exit_code == 0, res.output
    if domain == "library":
        # Without a rules file the renewal gate is learned from the runs: printed with the runs on each side and
        # whether the policy states it.
        gates = [line for line in res.output.splitlines() if line.startswith("    gate: ")]
        assert any(re.search(r"learned from the runs: \d+ write\(s\) by passed runs on an allowed value, \d+ record",
                             g) for g in gates), res.output
    if domain == "library" and expected == "with":
        _the_hold_is_placed_for_the_member_asking(out / "capabilities.json", tmp_path / "envs")
    scored = subprocess.run([sys.executable, str(EXTERNAL / "score.py"), str(out / "capabilities.json"),
                             str(tmp_path / f"{domain}.truth.json")], check=True, capture_output=True, text=True).stdout
    m = re.search(r"recovered (\d+) of (\d+) .*precision ([\d.]+)", scored)
    assert m, scored
    assert int(m.group(1)) >= FLOORS[domain], scored
    assert float(m.group(3)) == 1.0, scored  # nothing kept for the decoy or the noise



def _the_hold_is_placed_for_the_member_asking(capabilities: Path, out: Path) -> None:
    """A write that names its user takes the user's own id: every place_hold scenario's user asked for the hold in the
    name of jun_silva_9313, the member of the real call the example came from, while introducing themselves as
    another member (found by falsepass's field echo on the env mined here)."""
    from trace_envs.envs_loader import env_class, import_module_from
    from trace_envs.generate.publish import MODULE_FILE, generate_one
    from trace_envs.spec.io import load_specs

    spec = next(s for s in load_specs(capabilities) if s.roles.get("write") == "place_hold")
    assert generate_one(spec, out).published
    env = env_class(import_module_from(out / spec.name / MODULE_FILE))()
    names = set()
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        member = re.search(r"My member id is (\w+)\.", obs).group(1)
        holds = [json.loads(a)["arguments"] for a in env.oracle_actions() if '"place_hold"' in a]
        assert holds and all(h["member_id"] == member for h in holds), (obs, holds)
        names.add(member.rsplit("_", 1)[0])
    # the users are drawn after the members the runs show (spec.rules.user_examples), not all one name: was
    # fay_patel_* on every seed
    assert len(names) >= 3, names
