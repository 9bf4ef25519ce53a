"""Importing a generated env module from its file and taking its `Env` class.

Both the registry (the `gym.make` path) and the generator's validation need this; it lives here so that the registry
never imports the generator.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path
from types import ModuleType

from trace_envs.runtime.base import TraceEnv


def import_module_from(path: Path, name: str | None = None) -> ModuleType:
    """Import an env module from a file.

    Args:
        path: the module file (a generated folder's `env.py`).
        name: the name to import it under; by default a unique one, so that two versions of one env never collide.
    """
    module_name = name or f"trace_envs_generated_{path.parent.name}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def env_class(module: ModuleType) -> type[TraceEnv]:
    """The module's `Env`, which must be a `TraceEnv` subclass (a TypeError otherwise)."""
    cls = getattr(module, "Env", None)
    if not (isinstance(cls, type) and issubclass(cls, TraceEnv)):
        raise TypeError(f"{module.__name__} does not define Env, a TraceEnv subclass")
    return cls
