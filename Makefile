# The two commands: `make test` and `make demo`. Both bootstrap .venv from pyproject.toml.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv test test-fast demo lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,plot,solver,data,ml,dist,browser]'
	@touch $(STAMP)

test: venv
	$(PY) -m pytest -q

# the inner loop: everything but the tests marked slow (golden, chaos, ...); `make test`
# still runs them all
test-fast: venv
	$(PY) -m pytest -q -m "not slow"

# the main job: every scheduler on 3 one-day slices of both workloads, then the report
# (a rerun skips the finished cells; examples/main-comparison.toml is the paper's scale)
demo: venv
	$(VENV)/bin/stratus sweep examples/demo.toml --results results/demo
	@mkdir -p report
	$(VENV)/bin/stratus report results/demo -o report/demo --force

lint: venv
	$(VENV)/bin/ruff check .

# make bench BENCH_ARGS="--quick" (or --volumes 0.25,0.5, --million, --json ...)
bench: venv
	$(PY) benchmarks/bench_replay.py $(BENCH_ARGS)
	$(PY) benchmarks/bench_waiting.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
