"""Registration of generated envs as `trace/<name>`, and the one place an env id a user typed is resolved.

`import trace_envs` registers every env folder (one holding `env.py`) found in the package's bundled `generated/`,
in `./generated`, and in each folder of `TRACE_ENVS_PATH` (os.pathsep-separated); `add_search_folder` adds one more
for the rest of the process (`trace-envs run` adds its own envs folder). When two folders hold an env of the
same name the later folder wins, so a user's regenerated env replaces the bundled one, and a `DuplicateEnvWarning`
names both files so the override is never silent.
"""

from __future__ import annotations

import difflib
import os
import warnings
from functools import partial
from pathlib import Path

import gymnasium as gym

from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.paths import bundled_generated_dir

NAMESPACE = "trace"
PATH_VARIABLE = "TRACE_ENVS_PATH"
_loaded: dict[str, type] = {}
_added: list[Path] = []


class DuplicateEnvWarning(UserWarning):
    """Two folders on the search path hold an env of the same name; the later one is registered."""


def _candidate_folders() -> list[Path]:
    """Every folder the registry looks in, in order, whether or not it exists."""
    paths = [bundled_generated_dir(), Path.cwd() / "generated"]
    paths += [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if p]
    paths += _added
    unique: list[Path] = []
    for p in paths:
        r = p.resolve()
        if r not in unique:
            unique.append(r)
    return unique


def search_path() -> list[Path]:
    """The existing folders the registry reads, in order (a later folder overrides an earlier one)."""
    return [p for p in _candidate_folders() if p.is_dir()]


def discover() -> dict[str, Path]:
    """Env name to its module file over the search path; a name found twice warns and the later folder wins."""
    found: dict[str, Path] = {}
    for folder in search_path():
        for module in sorted(folder.glob("*/env.py")):
            name = module.parent.name
            if name.startswith("."):
                continue
            if name in found:
                warnings.warn(
                    f"env {NAMESPACE}/{name} is defined twice: {found[name]} and {module}; using {module}",
                    DuplicateEnvWarning,
                    stacklevel=2,
                )
            found[name] = module
    return found


def load_env_class(module_path: str) -> type:
    """Import a generated env module once per process and return its `Env` class.

    Args:
        module_path: the path of a generated folder's `env.py`.
    """
    cls = _loaded.get(module_path)
    if cls is None:
        path = Path(module_path)
        cls = env_class(import_module_from(path, name=f"trace_envs_generated.{path.parent.name}"))
        _loaded[module_path] = cls
    return cls


def make_env(module_path: str, **kwargs):
    """Entry point Gymnasium calls: build the env defined in `module_path` (kwargs go to the env's constructor)."""
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


def add_search_folder(folder: str | Path) -> list[str]:
    """Look in `folder` too, after every other folder (so its envs override those of the same name), for the rest of
    this process, and register what the search path now holds; returns the ids registered."""
    path = Path(folder).resolve()
    if path not in _added:
        _added.append(path)
    return register_all()


def registered() -> dict[str, Path]:
    """Registered trace env ids and their module paths."""
    return {f"{NAMESPACE}/{n}": p for n, p in discover().items()}


def registered_ids(prefix: str = f"{NAMESPACE}/") -> list[str]:
    """The ids in Gymnasium's registry that start with `prefix`, sorted."""
    return sorted(k for k in gym.registry if k.startswith(prefix))


def resolve_env_id(env: str) -> str:
    """The registered id a user meant by `env`: `trace/<name>`, a bare `<name>`, or any id already registered.

    The folders are read again first when the id is not registered yet (`TRACE_ENVS_PATH` may have changed since
    `import trace_envs`). Raises Gymnasium's `NameNotFound` for an unknown id, naming the folders looked in and how
    to add one.

    Args:
        env: what the user typed (a CLI argument, an `env_id` field of a config).
    """
    candidates = [env] if "/" in env else [f"{NAMESPACE}/{env}", env]
    for attempt in range(2):
        for c in candidates:
            if c in gym.registry:
                return c
        if attempt == 0:
            register_all()
    name = candidates[0].split("/", 1)[1] if candidates[0].startswith(f"{NAMESPACE}/") else candidates[0]
    known = registered_ids()
    close = difflib.get_close_matches(candidates[0], known, n=3)
    folders = "; ".join(f"{p}{'' if p.is_dir() else ' (missing)'}" for p in _candidate_folders())
    raise gym.error.NameNotFound(
        f"unknown env {candidates[0]!r}"
        + (f" (did you mean {', '.join(close)}?)" if close else "")
        + f": no folder holds {name}/env.py. Looked in: {folders}. "
        f"To add a folder of generated envs, set {PATH_VARIABLE}=DIR (several joined by {os.pathsep!r}) "
        f"or generate into ./generated (trace-envs generate SPEC -o generated). "
        f"Registered: {len(known)} envs (trace-envs list)."
    )
