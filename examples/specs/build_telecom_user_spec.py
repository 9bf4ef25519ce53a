"""Build the example spec of the user_side_action family over the real tau2-bench telecom domain, by mining it.

    .venv/bin/python examples/specs/build_telecom_user_spec.py [--data ../shared/data/tau2-bench] [--out examples/specs]

In tau2 telecom the device (airplane mode, data roaming, mobile data, the SIM card) is reachable only through the
user's own tools, and its state comes back as their text ("Airplane Mode: ON ..."). Offline mining of the real gpt-4.1
run (40 simulations, 18 passed) learns from the user's check_network_status texts before and after each toggle which
user tool fixes which field, and keeps `have_user_toggle_airplane_mode_or_toggle_roaming`; this script keeps that spec
and only words the user's complaint as the real tasks' users put it (their mobile data is not working) before
writing it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trace_envs.mining.pipeline import mine
from trace_envs.spec.model import CapabilitySpec
from trace_envs.trajectories.loaders import load_runs

HERE = Path(__file__).resolve().parent
NAME = "telecom_user_fixes_airplane_or_roaming"
MINED = "have_user_toggle_airplane_mode_or_toggle_roaming"
RUNS = Path("telecom-results") / "gpt-4.1_telecom.json"


DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "tau2-bench"


def build(data: Path) -> CapabilitySpec:
    result = mine(load_runs([data / RUNS]).runs)
    mined = next(s for s in result.capabilities if s.name == MINED)
    params = {**mined.params, "symptom": "My mobile data is not working on my phone. Can you help me fix it?",
              "phrase": "get my mobile data working again"}
    return mined.model_copy(update={
        "name": NAME,
        "params": params,
        "hint": "Ask the user to check the network status on their phone, ask for the one fix it shows (naming it), "
        "and have them check again before saying it works.",
    }).with_hash()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    spec = build(args.data)
    CapabilitySpec.model_validate(spec.model_dump(mode="json"))  # the family's requirements hold for what is written
    path = args.out / f"{spec.name}.json"
    path.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
