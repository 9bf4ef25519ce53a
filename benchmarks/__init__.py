"""Benchmarks run by `make bench`: each module exposes `run() -> list[str]` and prints ratios against a baseline
measured in the same process (these machines are noisy; absolute timings are not asserted in tests), and `smoke() ->
list[str]`, the same code at a few samples each, which the test suite runs so that a benchmark that crashes fails a
test (`python -m benchmarks --smoke` runs them all that way; their figures mean nothing)."""
