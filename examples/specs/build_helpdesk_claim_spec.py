"""Build the example spec of the claim_verification family over the help-desk planted domain, by mining it.

    .venv/bin/python examples/specs/build_helpdesk_claim_spec.py [--out examples/specs]

The help-desk runs (2,000, seed 0) carry the `trusts_claim` deficit: told that an invoice is already paid, the agent
waives its late fee without looking the invoice up, or after reading an open one. Offline mining finds the capability
and its params (the field the customers' claims are about, the value they claim, the values the records show
instead); this script keeps that spec and only names it and gives its hint before writing it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.mining.pipeline import mine
from trace_envs.spec.model import CapabilitySpec

HERE = Path(__file__).resolve().parent
NAME = "helpdesk_verify_paid_invoice_before_waiver"


def build() -> CapabilitySpec:
    result = mine(DOMAIN.generate(2000, seed=0), rules=DOMAIN.rules)
    mined = next(s for s in result.capabilities if s.family == "claim_verification")
    return mined.model_copy(update={
        "name": NAME,
        "hint": "Look the invoice up with get_invoice before anything else; waive the late fee only when its status "
        "is paid, and otherwise tell the customer the status it shows.",
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
