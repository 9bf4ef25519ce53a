"""The help-desk planted domain: a home internet and mobile provider's help desk, a second planted domain with its
own tool names and record shapes (customers, accounts with invoices, a service line, settings).

`DOMAIN` is a `trace_envs.datasets.sim.PlantedDomain`. Its core (`core.py`) holds the customer, the account record, the
lookup and hand-off tools and the policy's opening; every other module of this package is one task kind (one
capability family's planted deficit) and is imported here automatically, so adding a kind adds one file.

    from trace_envs.datasets.helpdesk import DOMAIN
    runs = DOMAIN.generate(2000, seed=0)
    DOMAIN.write(runs, "helpdesk.json")        # tau-bench format, what a user brings
"""

from __future__ import annotations

import importlib
import pkgutil

from trace_envs.datasets.helpdesk.core import DOMAIN, add_decoy

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module != "core" and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
add_decoy()

__all__ = ["DOMAIN"]
