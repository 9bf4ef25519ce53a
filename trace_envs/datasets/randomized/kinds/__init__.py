"""One task kind per capability family, each written from the capability it stands for (what a correct agent does,
and the deficit that skips it), not from how any detector finds it. Every module has `FAMILY` and `install(core, rng,
rate)`, which adds its tools, its policy paragraph, its deficit and its task kind to the drawn domain.

A deficit fails a run only when it matters (a gate skipped on a record the write was allowed on does no harm); each
module's `P_MATTERS` is how often it does, so the domain can give every kind a fair share of the failed runs.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

KINDS: dict[str, ModuleType] = {}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    _mod = importlib.import_module(f"{__name__}.{_module}")
    KINDS[_mod.FAMILY] = _mod

FAMILIES = tuple(sorted(KINDS))
