"""Build the example specs over the help-desk planted domain, by mining it.

    .venv/bin/python examples/specs/build_helpdesk_specs.py [--out examples/specs]

The planted help-desk runs (2,000, seed 0) carry one deficit per task kind (`trace_envs/datasets/helpdesk/`). Offline
mining finds a capability for each; this script writes, under a stable example name, the mined spec of each family
listed in `EXAMPLES` (the families whose example env comes from this domain), unchanged but for its name.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.mining.pipeline import mine
from trace_envs.spec.model import CapabilitySpec

HERE = Path(__file__).resolve().parent
# example name -> (family, a word its mined name holds)
EXAMPLES = {
    "helpdesk_pay_open_invoices": ("aggregation_arithmetic", "pay_open_invoices"),
    "helpdesk_enable_autopay_then_retry": ("error_recovery", "recover_set_roaming"),
    "helpdesk_verify_paid_invoice_before_waiver": ("claim_verification", "claim_before_waive_late_fee"),
}


def build() -> list[CapabilitySpec]:
    result = mine(DOMAIN.generate(2000, seed=0), rules=DOMAIN.rules)
    out = []
    for name, (family, word) in EXAMPLES.items():
        mined = next((s for s in result.capabilities if s.family == family and word in s.name), None)
        if mined is None:
            raise SystemExit(f"error: mining the help-desk runs kept no {family} capability named *{word}*")
        out.append(mined.model_copy(update={"name": name}).with_hash())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    for spec in build():
        CapabilitySpec.model_validate(spec.model_dump(mode="json"))
        path = args.out / f"{spec.name}.json"
        path.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
