"""Run every benchmark module (or those named on the command line), each in its own process: `python -m benchmarks
[--smoke] [name ...]`. `--smoke` runs each at its smoke size (does it run at all?); `python -m benchmarks mining
--random 30` mines 30 randomized domains instead of the planted sets."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path


def _usage(names: list[str]) -> str:
    """The module docstring, then every benchmark with the first line of its own docstring."""
    lines = [__doc__.strip(), "", "benchmarks:"]
    for name in names:
        doc = (importlib.import_module(f"benchmarks.{name}").__doc__ or "").strip().splitlines()
        lines.append(f"  {name[len('bench_'):]:<16} {doc[0] if doc else ''}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    # Options a benchmark reads from the environment: the soak's length (`soak --minutes 3`), the randomized domains
    # the mining benchmark mines instead of its planted sets (`mining --random 30 [--random-out PATH]`).
    for flag, var in (("--minutes", "TRACE_ENVS_SOAK_MINUTES"), ("--random", "TRACE_BENCH_RANDOM"),
                      ("--random-out", "TRACE_BENCH_RANDOM_OUT")):
        if flag in argv:
            at = argv.index(flag)
            os.environ[var] = argv[at + 1]
            argv = argv[:at] + argv[at + 2:]
    smoke = "--smoke" in argv
    argv = [a for a in argv if a != "--smoke"]
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if "-h" in argv or "--help" in argv:
        print(_usage(names))
        return 0
    wanted = [n if n.startswith("bench_") else f"bench_{n}" for n in argv] or names
    unknown = [n for n in wanted if n not in names]
    if unknown:
        print(f"unknown benchmark {unknown[0]}; known: {', '.join(names)}")
        return 2
    if len(wanted) > 1:
        # Each in a fresh process: a benchmark measures its own subject, not what the one before left (the bridge's
        # torch threads and heap made the env steps after it 10-20% slower)
        codes = [subprocess.run([sys.executable, "-m", "benchmarks", *(["--smoke"] if smoke else []), name],
                                cwd=here.parent).returncode for name in wanted]
        return max(codes)
    failed = False
    for name in wanted:
        print(f"== {name}")
        start = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            lines = module.smoke() if smoke else module.run()
        except Exception as exc:  # report and go on: one broken benchmark should not hide the others
            print(f"   ERROR {type(exc).__name__}: {exc}")
            failed = True
            continue
        for line in lines:
            print(f"   {line}")
            failed = failed or ("FAIL" in line and not smoke)  # a smoke run's figures mean nothing
        print(f"   ({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
