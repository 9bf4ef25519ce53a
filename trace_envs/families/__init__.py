"""Capability families, one module each; importing this package registers the built-in ones.

A built-in family is any module of this package other than the infrastructure (`base`, `registry`, `labeling`,
`kit`): it calls `register_family` when imported. A user's family does the same from its own module (see
`examples/custom_family.py`).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from trace_envs.checks.clauses import Check
from trace_envs.families.base import Family, Proposal, ProposalContext
from trace_envs.families.registry import FamilyError, all_families, get_family, register_family, unregister_family

_INFRASTRUCTURE = {"base", "registry", "labeling", "kit"}

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _INFRASTRUCTURE and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")


def env_check(family: str, roles: dict[str, str], params: dict[str, Any] | None = None, requests: int = 2) -> Check:
    """The check a generated env of `family` scores episodes with (see the family's module for its bindings)."""
    fam = get_family(family)
    missing = [r for r in fam.roles if r not in roles]
    if missing:
        raise ValueError(f"family {family} needs roles {list(fam.roles)}; missing {missing}")
    return fam.check(roles, params or {}, requests=requests)


__all__ = [
    "Family",
    "FamilyError",
    "Proposal",
    "ProposalContext",
    "all_families",
    "env_check",
    "get_family",
    "register_family",
    "unregister_family",
]
