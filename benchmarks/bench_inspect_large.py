"""`trace-envs inspect` on one large JSONL of small runs: time and peak memory (RSS) grow with the runs or stay flat.

Writes N synthetic OpenAI-messages runs (1000 tasks, one tool call each, a third of them failing) to a temporary file
and runs `trace-envs inspect FILE --json` on it in a child process, reporting wall time and the child's own peak RSS.
Floor (`python -m benchmarks inspect_large`, 100,000 runs): peak RSS at most 300 MB (it was 580 MB before inspect
streamed). Any sizes: `python benchmarks/bench_inspect_large.py 100000 1000000`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_runs(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            run = {
                "task_id": i % 1000,
                "trial": i // 1000,
                "reward": 0.0 if i % 3 == 0 else 1.0,
                "messages": [
                    {"role": "user", "content": f"Where is order #{i}?"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "function": {"name": "get_order_details", "arguments": {"order_id": f"#{i}"}}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"order_id": f"#{i}", "status": "pending"})},
                    {"role": "assistant", "content": "It is pending."},
                ],
            }
            f.write(json.dumps(run) + "\n")


def measure(n: int) -> tuple[int, float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"runs_{n}.jsonl"
        write_runs(path, n)
        size_mb = path.stat().st_size / 1e6
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"inspect of {n} runs exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        peak_mb = int(proc.stderr.rsplit("PEAK_KB ", 1)[1]) / 1024
        report = json.loads(proc.stdout.splitlines()[0])
        return n, peak_mb, (f"{n:>9,} runs ({size_mb:6.1f} MB): {wall:6.1f} s, peak RSS {peak_mb:6.0f} MB; "
                            f"inspect counted runs={report['runs']} passed={report['passed']} tasks={report['tasks']}")


# The child reports its own peak RSS, so that other children of this process do not count: VmHWM, its address space's
# own peak. getrusage's ru_maxrss carries the parent's peak across fork + exec: in `make bench`, run after the bridge
# benchmark had a model loaded, it read 1,408 MB for an inspect that peaks near 100 MB.
_CHILD = (
    "import runpy, sys\n"
    "sys.argv = ['trace-envs', 'inspect', sys.argv[1], '--json']\n"
    "try:\n"
    "    runpy.run_module('trace_envs.cli', run_name='__main__')\n"
    "finally:\n"
    "    with open('/proc/self/status') as status:\n"
    "        peak = next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
    "    sys.stderr.write(f'PEAK_KB {peak}\\n')\n"
)
FLOOR_MB = 300
FLOOR_RUNS = 100_000


def run(runs: int = FLOOR_RUNS) -> list[str]:
    _, peak, line = measure(runs)
    return [line, f"peak RSS {peak:.0f} MB (floor <= {FLOOR_MB} MB at {FLOOR_RUNS:,} runs)  "
                  f"{'PASS' if peak <= FLOOR_MB else 'FAIL'}"]


def smoke() -> list[str]:
    return run(1000)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["100000"]:
        print(measure(int(arg))[2], flush=True)
