"""The family registry: one `register_family` path for built-in families and a user's own.

Everything that needs to know the families (the spec schema, the offline proposer, the labeler, the generator, the
planted data set) asks this registry; nothing else lists family names.
"""

from __future__ import annotations

import inspect

from pydantic import BaseModel

from trace_envs.families.base import SLUG, Family

_FAMILIES: dict[str, Family] = {}


class FamilyError(ValueError):
    """A family that cannot be registered, or a name no family is registered under."""


def register_family(family: Family) -> Family:
    """Register a family instance under `family.name`; returns it (so a module can write `X = register_family(X())`).

    Raises `FamilyError` when `family` is not a `Family` instance, its name is not a slug, a family of that name is
    already registered, or one of `summary`, `roles`, `params`, `env_class` is missing or of the wrong type."""
    if inspect.isclass(family) and issubclass(family, Family):
        raise FamilyError(f"register_family takes a Family instance: call register_family({family.__name__}())")
    if not isinstance(family, Family):
        raise FamilyError(f"register_family takes a Family instance, got {type(family).__name__}")
    name = getattr(family, "name", None)
    if not isinstance(name, str) or not SLUG.fullmatch(name):
        raise FamilyError(
            f"family {type(family).__name__}: name must be a slug (lower-case letters, digits, _; 2-63 chars), "
            f"got {name!r}"
        )
    if name in _FAMILIES:
        other = type(_FAMILIES[name])
        raise FamilyError(
            f"family {name!r} is already registered (by {other.__module__}.{other.__qualname__}); "
            "pick another name"
        )
    problems = []
    if not isinstance(getattr(family, "summary", None), str) or not family.summary.strip():
        problems.append("summary (a sentence) is missing")
    roles = getattr(family, "roles", None)
    if not isinstance(roles, tuple) or not all(isinstance(r, str) for r in roles):
        problems.append("roles must be a tuple of role names")
    if not (inspect.isclass(family.params) and issubclass(family.params, BaseModel)):
        problems.append("params must be a pydantic model class")
    from trace_envs.runtime.base import TraceEnv

    env_class = getattr(family, "env_class", None)
    if not (inspect.isclass(env_class) and issubclass(env_class, TraceEnv)):
        problems.append("env_class must be a TraceEnv subclass")
    if problems:
        raise FamilyError(f"family {name!r}: " + "; ".join(problems))
    _FAMILIES[name] = family
    return family


def get_family(name: str) -> Family:
    """The family registered as `name`; `FamilyError` naming the registered ones otherwise."""
    family = _FAMILIES.get(name)
    if family is None:
        known = ", ".join(sorted(_FAMILIES)) or "none"
        raise FamilyError(f"unknown family {name!r}; registered families: {known}")
    return family


def all_families() -> dict[str, Family]:
    """Every registered family by name, in registration order."""
    return dict(_FAMILIES)


def unregister_family(name: str) -> None:
    """Remove a family (for tests and notebooks that register one and clean up)."""
    _FAMILIES.pop(name, None)
