"""Hypothesis strategies for random small workloads and replay configurations, shared by
the property tests of the engine, its faults and the integer bound."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.helpers.trace import make_trace

CPUS = [0.1, 0.25, 0.5, 1, 2, 3.5, 4, 8, 16, 40, 64]
MEMS = [0.2, 0.5, 1, 2, 7.5, 8, 16, 64, 160, 256]


# multiples of 60 make arrivals coincide with ticks; floats make them fall between. Built
# once: a strategy made inside workloads' loops would be validated anew at every draw (a
# third of a small example's time)
SUBMITS = st.one_of(st.integers(0, 40).map(lambda k: 60.0 * k), st.floats(0, 2400, allow_nan=False))
RUNTIMES = st.one_of(st.integers(1, 40).map(lambda k: 60.0 * k),
                     st.floats(0.5, 4000, allow_nan=False))


@st.composite
def workloads(draw, max_jobs: int = 8, max_tasks: int = 5):
    rows = []
    for j in range(draw(st.integers(1, max_jobs))):
        submit = draw(SUBMITS)
        cpu, mem = draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMS))
        for i in range(draw(st.integers(1, max_tasks))):
            rows.append((j, i, submit, draw(RUNTIMES), cpu, mem))
    return make_trace(rows)


configs = st.fixed_dictionaries({
    "tick_s": st.sampled_from([7.0, 30.0, 60.0, 300.0]),
    "spinup_s": st.sampled_from([(0.0, 0.0), (5.0, 5.0), (30.0, 160.0)]),
    "seed": st.integers(0, 2**16),
})
