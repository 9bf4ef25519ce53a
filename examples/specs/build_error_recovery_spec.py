"""Build the example spec of the error_recovery family over the help-desk planted domain, by mining it.

    .venv/bin/python examples/specs/build_error_recovery_spec.py [--out examples/specs]

The help-desk runs (2,000, seed 0) carry the `gives_up_on_error` deficit: after `set_roaming` fails with "Error:
autopay must be enabled before roaming can be turned on" the agent stops, or retries the same call, instead of enabling
autopay and retrying. Offline mining finds the capability and its settings (the error, the record field the fix
changes and its values, the fix's own error when the card on file is expired); this script keeps that spec and only
names it and gives it a hint before writing it. tau-bench airline's runs show error recovery too, but by a read (the
retry changes the payment id), which has no scenario builder yet: see the family's module.
"""

from __future__ import annotations

from build_user_action_spec import main  # the shared writer: validate, then write the spec as JSON into --out

from trace_envs.datasets.helpdesk import DOMAIN
from trace_envs.mining.pipeline import mine
from trace_envs.spec.model import CapabilitySpec

NAME = "helpdesk_enable_autopay_then_retry"


def build() -> CapabilitySpec:
    result = mine(DOMAIN.generate(2000, seed=0), rules=DOMAIN.rules)
    mined = next(s for s in result.capabilities if s.family == "error_recovery")
    return mined.model_copy(update={
        "name": NAME,
        "hint": "When set_roaming fails because autopay is off, enable autopay with enable_autopay and call set_roaming "
        "again; if autopay cannot be enabled, tell the customer why.",
    }).with_hash()


if __name__ == "__main__":
    main(build, __doc__)
