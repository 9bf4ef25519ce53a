"""Registration of generated envs as `trace/<name>`.

`import trace_envs` registers every env folder (one holding `env.py`) found in the package's bundled `generated/`,
in `./generated`, and in each folder of `TRACE_ENVS_PATH` (os.pathsep-separated). Later folders override earlier
ones with the same name, so a user's regenerated env wins over the bundled one.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import gymnasium as gym

from trace_envs.paths import bundled_generated_dir

NAMESPACE = "trace"
_loaded: dict[str, type] = {}


def search_path() -> list[Path]:
    paths = [bundled_generated_dir(), Path.cwd() / "generated"]
    paths += [Path(p) for p in os.environ.get("TRACE_ENVS_PATH", "").split(os.pathsep) if p]
    unique: list[Path] = []
    for p in paths:
        r = p.resolve()
        if r not in unique and r.is_dir():
            unique.append(r)
    return unique


def discover() -> dict[str, Path]:
    """Env name to its module file, over the search path (later folders win)."""
    found: dict[str, Path] = {}
    for folder in search_path():
        for module in sorted(folder.glob("*/env.py")):
            name = module.parent.name
            if not name.startswith("."):
                found[name] = module
    return found


def load_env_class(module_path: str) -> type:
    """Import a generated env module once per process and return its `Env` class."""
    from trace_envs.generate.validate import env_class, import_module_from

    cls = _loaded.get(module_path)
    if cls is None:
        path = Path(module_path)
        cls = env_class(import_module_from(path, name=f"trace_envs_generated.{path.parent.name}"))
        _loaded[module_path] = cls
    return cls


def make_env(module_path: str, **kwargs):
    """Entry point Gymnasium calls: build the env defined in `module_path`."""
    return load_env_class(module_path)(**kwargs)


def register_all() -> list[str]:
    """Register every discovered env as `trace/<name>`; returns the ids registered."""
    ids = []
    for name, module in discover().items():
        env_id = f"{NAMESPACE}/{name}"
        gym.registry.pop(env_id, None)
        gym.register(id=env_id, entry_point=partial(make_env, str(module)), disable_env_checker=False)
        ids.append(env_id)
    return ids


def registered() -> dict[str, Path]:
    """Registered trace env ids and their module paths."""
    return {f"{NAMESPACE}/{n}": p for n, p in discover().items()}
