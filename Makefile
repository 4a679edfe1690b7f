# The two commands: `make test` and `make demo`. Both bootstrap .venv from pyproject.toml.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: venv test test-fast demo lint bench clean

venv: $(STAMP)

EXTRAS := .[dev,plot,solver,data,ml,dist,browser,live]

# uv installs the same packages from the same index in half pip's time (docs/decisions.md,
# "Bootstrap with uv"). No bytecode up front: compiling all 12,000 modules of the extras cost
# 65 s of CPU, the ~2,200 a run imports 12 s, compiled once on first import and kept (the
# suite and the demo write bytecode whatever the environment says). If uv cannot be had,
# pip does it all.

# what a run imports, compiled once here: left to the first import, both xdist workers and
# the processes the first tests start compiled the same modules at once (a clean clone's
# first `make test` took 31 s longer than its second). Two processes, one per half of the
# list, as a run has two cores at least (12 s of CPU).
define WARM_IMPORTS
import importlib, sys
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except Exception:  # an extra that failed to install: the suite says so, not this
        pass
endef
export WARM_IMPORTS
WARM_A := stratus.app.cli stratus.app.api stratus.app.report pandas pyarrow.parquet matplotlib.pyplot
WARM_B := hypothesis pytest xdist ortools.sat.python.cp_model duckdb sklearn.linear_model \
          dask.distributed boto3 moto kubernetes

# the compiled core (setup.py): its sources are prerequisites, and the project is rebuilt
# whenever the stamp is (uv would keep an editable build whose pyproject is unchanged)
NATIVE := setup.py $(wildcard stratus/*/*.pyx)

$(STAMP): pyproject.toml $(NATIVE)
	$(PYTHON) -m venv $(VENV)
	@if $(PY) -m pip install --quiet 'uv>=0.4' && \
	    $(VENV)/bin/uv pip install --quiet --python $(PY) --reinstall-package stratus-vc \
	        -e '$(EXTRAS)'; then :; \
	else echo "make: uv failed; installing with pip" >&2; \
	    $(PY) -m pip install --quiet --upgrade pip && $(PY) -m pip install --quiet -e '$(EXTRAS)'; fi
	@env -u PYTHONDONTWRITEBYTECODE $(PY) -c "$$WARM_IMPORTS" $(WARM_A) & \
	    env -u PYTHONDONTWRITEBYTECODE $(PY) -c "$$WARM_IMPORTS" $(WARM_B); wait
	@touch $(STAMP)

# Bytecode caches on for the suite, whatever the environment says: with
# PYTHONDONTWRITEBYTECODE set, each xdist worker and each of the ~100 processes the tests
# start compiled the project and the test modules anew (7 s of collection per worker
# instead of 3.5 s)
TESTENV := env -u PYTHONDONTWRITEBYTECODE

test: venv
	$(TESTENV) $(PY) -m pytest -q

# the inner loop, under a minute: everything but the tests marked slow (half a second or
# more, processes, fuzzes, long properties, golden: docs/development.md#tests); `make test`
# still runs them all
test-fast: venv
	$(TESTENV) $(PY) -m pytest -q -m "not slow"

# the main job: every scheduler on 3 one-day slices of both workloads, then the report
# (a rerun skips the finished cells; examples/main-comparison.toml is the paper's scale)
demo: venv
	$(TESTENV) $(VENV)/bin/stratus sweep examples/demo.toml --results results/demo
	@mkdir -p report
	$(TESTENV) $(VENV)/bin/stratus report results/demo -o report/demo --force

lint: venv
	$(VENV)/bin/ruff check .

# make bench BENCH_ARGS="--quick" (or --volumes 0.25,0.5, --million, --json ...)
bench: venv
	$(PY) benchmarks/bench_replay.py $(BENCH_ARGS)
	$(PY) benchmarks/bench_waiting.py
	$(PY) benchmarks/bench_sww.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
