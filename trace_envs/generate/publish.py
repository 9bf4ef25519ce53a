"""`generate`: render, validate, and only then publish each spec into `<out>/<name>/` (env.py, spec.json and a
README.md with the env's policy, tools, action format, check and one oracle episode).

Publishing is atomic: the new env is written and validated in a hidden sibling folder, then swapped in with one
rename (an atomic exchange where the kernel offers it), so a crash leaves the old complete env or the new one.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from trace_envs.atomic import staging_dir, swap_in
from trace_envs.envs_loader import env_class, import_module_from
from trace_envs.generate.memo import validated
from trace_envs.generate.readme import env_readme
from trace_envs.generate.render import render_module
from trace_envs.generate.validate import CheckReport, validate_env
from trace_envs.spec.model import CapabilitySpec

T = TypeVar("T")
R = TypeVar("R")
PR_SET_PDEATHSIG = 1  # linux/prctl.h
MODULE_FILE = "env.py"
SPEC_FILE = "spec.json"
README_FILE = "README.md"


class GenerateResult(BaseModel):
    name: str
    path: str
    published: bool
    report: CheckReport | None = None
    error: str | None = None


def env_files(spec: CapabilitySpec) -> dict[str, str]:
    """The files of a generated env, as text: what `generate` writes and what the sync test compares."""
    spec = spec.with_hash()
    return {
        MODULE_FILE: render_module(spec),
        SPEC_FILE: json.dumps(spec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
    }


def safe_target(out_dir: Path, name: str) -> Path:
    """`out_dir/name`, refusing any name that is not a plain folder name inside `out_dir`."""
    out = out_dir.resolve()
    target = (out / name).resolve()
    if target.parent != out or name.startswith(".") or "/" in name or "\\" in name:
        raise ValueError(f"refusing spec name {name!r}: it would write outside {out}")
    return target


def published_domain(target: Path) -> str | None:
    """The domain of the env published at `target`: None when nothing is there, "unknown" for a folder whose
    spec.json is missing or unreadable (not an env `generate` wrote, or damaged)."""
    if not target.exists():
        return None
    try:
        domain = json.loads((target / SPEC_FILE).read_text(encoding="utf-8")).get("domain", "custom")
    except (OSError, ValueError, AttributeError):
        return "unknown"
    return domain if isinstance(domain, str) else "unknown"


def foreign_env(spec: CapabilitySpec, out_dir: Path) -> str | None:
    """The domain of the env that publishing `spec` into `out_dir` would replace, when it is another domain's (two
    domains mined apart can name a capability alike: airline's and retail's complete_all_required_writes)."""
    domain = published_domain(safe_target(out_dir, spec.name))
    return domain if domain is not None and domain != spec.domain else None


def generate_one(spec: CapabilitySpec, out_dir: Path, validate: bool = True, seeds: int | None = None,
                 replace: bool = False) -> GenerateResult:
    """Publish `spec` into `out_dir/<name>/`; an env of another domain already there is replaced only with
    `replace`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = safe_target(out_dir, spec.name)
    other = None if replace else foreign_env(spec, out_dir)
    if other is not None:
        return GenerateResult(name=spec.name, path=str(target), published=False,
                              error=f"{target} holds the {other} env {spec.name}; this spec is of domain {spec.domain}: "
                                    "not replaced without replace=True")
    staging = None
    try:
        staging = staging_dir(target)
        for filename, text in env_files(spec).items():
            (staging / filename).write_text(text)
        source = (staging / MODULE_FILE).read_text()
        compile(source, str(target / MODULE_FILE), "exec")
        report = None
        cls = env_class(import_module_from(staging / MODULE_FILE))
        (staging / README_FILE).write_text(env_readme(cls))
        if validate:
            kwargs = {} if seeds is None else {"oracle_seeds": seeds, "baseline_seeds": max(seeds, 10)}
            report = validated(cls, source, kwargs, partial(validate_env, cls, **kwargs))
            if not report.ok:
                return GenerateResult(
                    name=spec.name, path=str(target), published=False, report=report, error="; ".join(report.problems)
                )
        swap_in(staging, target)
        return GenerateResult(name=spec.name, path=str(target), published=True, report=report)
    except Exception as exc:  # any failure (render, compile, import, env error) must leave the old env in place
        return GenerateResult(name=spec.name, path=str(target), published=False, error=f"{type(exc).__name__}: {exc}")
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def cores() -> int:
    """The CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def pool_map(fn: Callable[[T], R], items: Iterable[T], workers: int | None = None,
             done: Callable[[T, R], Any] | None = None) -> list[R]:
    """`[fn(x) for x in items]`, on up to `workers` (default: every core) forked processes; `done(x, result)` after
    each, in order. Validation is CPU-bound and each spec's is independent and seeded, so the results are those of a
    loop; a forked worker inherits the parent's registered families. Where fork is unavailable, or one item: a loop."""
    items = list(items)
    n = min(len(items), workers or cores())
    results: list[R] = []
    if n < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for x in items:
            results.append(fn(x))
            if done is not None:
                done(x, results[-1])
        return results
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"), initializer=_worker_setup,
                             initargs=(os.getpid(),)) as pool:
        for x, result in zip(items, pool.map(fn, items)):
            results.append(result)
            if done is not None:
                done(x, result)
    return results


def _worker_setup(parent: int) -> None:
    _die_with_parent(parent)
    _own_std_streams()


def _die_with_parent(parent: int) -> None:
    # A pool worker waits on its task queue for ever: when `mine` or `generate` is killed (SIGKILL skips every
    # clean-up), its workers would stay, each holding the parent's memory. On Linux the kernel kills them with it.
    # The thread that forked them is the one running pool_map, alive for as long as the pool is.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl (not Linux): workers end when their queue breaks, as before
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _own_std_streams() -> None:
    # A thread of the parent (a live progress bar) may hold the lock of sys.stderr's buffer at the fork: a worker
    # writing a warning to the stream it inherited would wait on that lock for ever. Each worker gets streams of its own.
    try:
        sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)
    except OSError:  # no such descriptor: nothing to write to either way
        pass


def generate_many(specs: list[CapabilitySpec], out_dir: Path, validate: bool = True, seeds: int | None = None,
                  replace: bool = False, workers: int | None = None,
                  done: Callable[[CapabilitySpec, GenerateResult], Any] | None = None) -> list[GenerateResult]:
    """`generate_one` of each spec, validated in parallel on up to `workers` processes (default: every core); specs
    that share a name (one target folder) run one after another, as a loop would."""
    one = partial(generate_one, out_dir=out_dir, validate=validate, seeds=seeds, replace=replace)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        workers = 1
    return pool_map(one, specs, workers, done)
