"""Benchmarks run by `make bench`: each module exposes `run() -> list[str]` and prints ratios against a baseline
measured in the same process (these machines are noisy; absolute timings are not asserted in tests)."""
