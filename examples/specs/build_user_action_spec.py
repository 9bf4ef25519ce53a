"""Build the example spec of the user_side_action family over the planted retail domain, by mining it.

    .venv/bin/python examples/specs/build_user_action_spec.py [--out examples/specs]

The planted runs (2,000, seed 0) carry the `vague_user_instruction` deficit: the agent gives vague advice instead of
telling the user the one fix on their phone. Offline mining finds the capability and its settings (what each user
tool changed in the app status, from the reads before and after the user acted); this script keeps that spec and only
words the user's side as the planted users do (their complaint) before writing it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trace_envs.datasets.planted import APP_SYMPTOM, PLANTED_RULES, generate_planted
from trace_envs.mining.pipeline import mine
from trace_envs.spec.model import CapabilitySpec

HERE = Path(__file__).resolve().parent
NAME = "planted_user_fixes_app_notifications"


def build() -> CapabilitySpec:
    result = mine(generate_planted(2000, seed=0), rules=PLANTED_RULES)
    mined = next(s for s in result.capabilities if s.family == "user_side_action")
    params = {**mined.params, "symptom": APP_SYMPTOM, "phrase": "get delivery notifications from the app again"}
    return mined.model_copy(update={
        "name": NAME,
        "params": params,
        "hint": "Read the app status, ask the user for the one fix it shows (naming it), and read it again before "
        "saying it works.",
    }).with_hash()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    spec = build()
    CapabilitySpec.model_validate(spec.model_dump(mode="json"))  # the family's requirements hold for what is written
    path = args.out / f"{spec.name}.json"
    path.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
