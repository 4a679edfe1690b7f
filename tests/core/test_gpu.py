"""A GPU dimension and multi-family catalogs: dimensions chosen per run, the §3.3 normaliser,
GPU requests in traces, the engine's invariants for every registered scheduler on a
3-dimension GPU catalog and on a c/m/r catalog, and each 2-D fast path against its general
path (docs/decisions.md, "A GPU dimension")."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base.errors import ConfigError, StratusError, TraceError
from stratus.base.resources import request_units, to_units
from stratus.pricing.catalog import M4, Catalog, InstanceType
from stratus.pricing.prices import SPOT, PriceBook
from stratus.pricing.synthetic_spot import generate_spot
from stratus.sim.engine import Engine, ReplayConfig
from stratus.traces.schema import Trace, fit_to_catalog
from tests.helpers.invariants import check_invariants, comparable
from tests.helpers.reference import general_paths

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")

# Hourly on-demand prices, us-east-1 Linux, as quoted in the brief of issue 19 (g5, p3);
# the CPU types at approximate 2017-2018 list prices. Test fixtures, not published data.
GPU_TYPES = [
    ("c5.large", 2, 4, 0.085, 0), ("m5.large", 2, 8, 0.096, 0), ("r5.large", 2, 16, 0.126, 0),
    ("m5.4xlarge", 16, 64, 0.768, 0), ("m5.16xlarge", 64, 256, 3.072, 0),
    ("g5.xlarge", 4, 16, 1.006, 1), ("g5.2xlarge", 8, 32, 1.212, 1),
    ("g5.12xlarge", 48, 192, 5.672, 4), ("g5.48xlarge", 192, 768, 16.288, 8),
    ("p3.2xlarge", 8, 61, 3.06, 1), ("p3.8xlarge", 32, 244, 12.24, 4),
]
GPU = Catalog([InstanceType(n, c, m, p, family=n.split(".")[0], gpus=g)
               for n, c, m, p, g in GPU_TYPES], name="gpu-test")
# c (1:2), m (1:4) and r (1:8) shapes, approximate 2017 us-west-2 prices (fixtures)
CMR = Catalog([
    *(InstanceType(f"c4.{s}", c, 2 * c, p, family="c4")
      for s, c, p in [("large", 2, 0.10), ("2xlarge", 8, 0.398), ("8xlarge", 32, 1.591)]),
    *M4.types,
    *(InstanceType(f"r4.{s}", c, 8 * c, p, family="r4")
      for s, c, p in [("large", 2, 0.133), ("4xlarge", 16, 1.064), ("16xlarge", 64, 4.256)]),
], name="cmr-test")

CPUS = [0.1, 0.5, 1, 2, 4, 8, 16, 64]
MEMS = [0.2, 1, 2, 8, 16, 64, 256]
GPUS = [1, 2, 4, 8]
# shares of one GPU, as the Alibaba trace's 1-GPU pods ask (gpu=share), and whole GPUs
SHARES = [0.05, 0.25, 0.47, 0.5, 0.6, 0.81, 1, 2, 4]


def frame(rows, gpus: bool) -> Trace:
    cols = ["job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib"]
    df = pd.DataFrame(rows, columns=[*cols, "gpus"] if gpus else cols)
    df["user"] = "u"
    df["job_name"] = "j" + df["job_id"].astype(str)
    df["priority"] = 0
    return Trace(df, name="t")


# built once, not at every draw (test_properties.SUBMITS says why)
SUBMITS = st.one_of(st.integers(0, 30).map(lambda k: 60.0 * k), st.floats(0, 1800, allow_nan=False))
RUNTIMES = st.one_of(st.integers(1, 30).map(lambda k: 60.0 * k),
                     st.floats(0.5, 3000, allow_nan=False))


@st.composite
def workloads(draw, gpu_share: float = 0.0, max_jobs: int = 6, max_tasks: int = 4,
              gpus=tuple(GPUS)):
    """CPU-only jobs, and with ``gpu_share`` > 0 GPU jobs too: ``gpus`` GPUs a task (1, 2,
    4 or 8), with CPU and memory per GPU in GPU instance proportions."""
    rows = []
    for j in range(draw(st.integers(1, max_jobs))):
        submit = draw(SUBMITS)
        if gpu_share and draw(st.floats(0, 1)) < gpu_share:
            g = draw(st.sampled_from(gpus))
            cpu = g * draw(st.sampled_from([0.5, 2, 4, 8]))
            mem = g * draw(st.sampled_from([2, 8, 16, 60]))
        else:
            g, cpu, mem = 0, draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMS))
        for i in range(draw(st.integers(1, max_tasks))):
            runtime = draw(RUNTIMES)
            rows.append((j, i, submit, runtime, cpu, mem, *([g] if gpu_share else [])))
    return frame(rows, gpus=bool(gpu_share))


@st.composite
def bursts(draw, gpu_share: float = 0.0, gpus=(0, 1, 2)):
    """Many small jobs of mixed shapes arriving together: several instances fit each task,
    so the tie-breaking rules of the packers and the copack all come into play."""
    rows = []
    for j in range(draw(st.integers(2, 14))):
        submit = 120.0 * draw(st.integers(0, 2))
        g = draw(st.sampled_from(gpus)) if gpu_share else 0
        cpu, mem = draw(st.sampled_from([(0.25, 1.5), (0.5, 0.5), (1, 2), (1.5, 0.75),
                                         (0.75, 3), (2, 1)]))
        for i in range(draw(st.integers(1, 3))):
            runtime = 60.0 * draw(st.integers(1, 40))
            rows.append((j, i, submit, runtime, cpu, mem, *([g] if gpu_share else [])))
    return frame(rows, gpus=bool(gpu_share))


def book(catalog: Catalog, market: str) -> PriceBook:
    od = PriceBook.on_demand(catalog)
    if market != SPOT:
        return od
    return od.with_series({(n, SPOT): s for n, s in generate_spot(catalog, days=1).items()})


configs = st.fixed_dictionaries({
    "tick_s": st.sampled_from([30.0, 60.0, 300.0]),
    "spinup_s": st.sampled_from([(0.0, 0.0), (30.0, 160.0)]),
    "seed": st.integers(0, 2**16),
    "market": st.sampled_from(["on-demand", SPOT]),
})


def run(trace, scheduler, catalog, conf):
    conf = dict(conf)
    prices = book(catalog, conf["market"])
    return Engine(trace, scheduler, ReplayConfig(record=True, catalog=catalog, prices=prices,
                                                 **conf)).run()


# --- dimensions and the normaliser ------------------------------------------------------

def test_dimensions_follow_the_catalog():
    assert M4.dims == ("cpu", "mem") and not M4.has_gpus
    assert CMR.dims == ("cpu", "mem")
    assert GPU.dims == ("cpu", "mem", "gpu") and GPU.has_gpus
    # a CPU type in a GPU catalog has 0 GPUs; on its own it is 2-D
    assert GPU["m5.large"].capacity == (2000, 8192, 0)
    assert InstanceType("m5.large", 2, 8, 0.096).capacity == (2000, 8192)
    assert GPU["p3.8xlarge"].capacity == (32000, 249856, 4000)  # thousandths of a GPU
    assert GPU.max_capacity == (192000, 786432, 8000)
    assert to_units(4, 16, 1) == (4000, 16384, 1000)
    assert to_units(1, 1, 0.47) == (1000, 1024, 470)  # a share: 470 thousandths
    assert to_units(1, 1, 0.0005)[2] == 1  # rounded up, as cpu and mem
    assert request_units([0.5, 0.5], [1.0, 1.0], [2, 0.47]).tolist() == [[500, 1024, 2000],
                                                                          [500, 1024, 470]]


def test_gpu_normaliser_is_the_smallest_nonzero_amount():
    # §3.3 divides by the smallest type's amount; c5.large has no GPU: one GPU (1000) is the unit
    assert GPU.smallest.name == "c5.large"
    assert GPU.norm == (2000, 4096, 1000)
    assert M4.norm == M4.smallest.capacity
    only4 = Catalog([InstanceType("a", 2, 8, 1.0), InstanceType("b", 8, 32, 9.0, gpus=4)])
    assert only4.norm == (2000, 8192, 4000)


@pytest.mark.parametrize("gpus", [-1, 1.5, True, "2", float("nan"), float("inf")])
def test_bad_gpu_count_is_refused(gpus):
    with pytest.raises(ConfigError, match="gpus must be an integer >= 0"):
        InstanceType("x", 2, 8, 0.1, gpus=gpus)


def test_whole_gpu_count_from_a_file_is_an_int():
    import numpy as np

    for g in (4.0, np.int64(4)):
        t = InstanceType("x", 2, 8, 0.1, gpus=g)
        assert t.gpus == 4 and type(t.gpus) is int and t.capacity == (2000, 8192, 4000)


# --- traces --------------------------------------------------------------------------

def test_negative_gpu_request_is_refused():
    with pytest.raises(TraceError, match="gpus must be >= 0.*row 0"):
        frame([(0, 0, 0.0, 10.0, 1.0, 1.0, -1)], gpus=True)


def test_gpu_task_on_a_catalog_without_gpus():
    t = frame([(0, 0, 0.0, 10.0, 1.0, 1.0, 0), (1, 0, 0.0, 10.0, 1.0, 1.0, 2)], gpus=True)
    with pytest.raises(TraceError, match="requests GPUs but catalog m4 has no GPU type.*job 1"):
        fit_to_catalog(t, M4, drop=False)
    kept = fit_to_catalog(t, M4, drop=True)
    assert kept.column("job_id").tolist() == [0]
    assert sum(kept.meta["load_report"]["dropped"].values()) == 1
    assert fit_to_catalog(t, GPU, drop=False) is t
    big = frame([(0, 0, 0.0, 10.0, 1.0, 1.0, 9)], gpus=True)  # more than 8 GPUs
    with pytest.raises(TraceError, match="larger than every gpu-test"):
        fit_to_catalog(big, GPU, drop=False)
    with pytest.raises(StratusError, match="requests GPUs"):
        Engine(t, make_scheduler("stratus"), ReplayConfig(market="on-demand"))


def test_fargate_refuses_gpu_tasks():
    from stratus.fargate import FargateCostModel

    t = frame([(0, 0, 0.0, 10.0, 1.0, 1.0, 0), (1, 0, 5.0, 10.0, 1.0, 1.0, 1)], gpus=True)
    with pytest.raises(TraceError, match="Fargate has none.*job 1"):
        FargateCostModel().replay(t, ReplayConfig(catalog=GPU, prices=PriceBook.on_demand(GPU),
                                                  market="on-demand"))
    cpu_only = frame([(0, 0, 0.0, 10.0, 1.0, 1.0, 0)], gpus=True)
    res = FargateCostModel().replay(cpu_only, ReplayConfig(
        catalog=GPU, prices=PriceBook.on_demand(GPU), market="on-demand"))
    assert res.summary["total_cost_usd"] > 0 and "util_gpu" in res.instances.columns


def test_gpu_replay_reports_the_gpu_dimension():
    t = frame([(0, k, 0.0, 3600.0, 4.0, 16.0, 1) for k in range(2)]
              + [(1, 0, 0.0, 3600.0, 2.0, 8.0, 0)], gpus=True)
    res = run(t, make_scheduler("stratus"), GPU, {"market": "on-demand", "seed": 1})
    check_invariants(t, res)
    u = res.summary["utilization"]
    assert {"cpu", "mem", "gpu", "progress_gpu"} <= u.keys()
    assert "util_gpu" in res.instances.columns
    gpu_types = {k for k in res.summary["cost_by_type"] if k[0] in "gp"}
    assert gpu_types, res.summary["cost_by_type"]


# --- every registered scheduler, 3-D GPU catalog and c/m/r catalog -------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=4)
@given(trace=workloads(gpu_share=0.4), conf=configs)
def test_every_scheduler_on_a_gpu_catalog(name, trace, conf):
    res = run(trace, make_scheduler(name), GPU, conf)
    check_invariants(trace, res)


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=4)
@given(trace=workloads(), conf=configs)
def test_every_scheduler_on_a_multi_family_catalog(name, trace, conf):
    res = run(trace, make_scheduler(name), CMR, conf)
    check_invariants(trace, res)


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=5)
@given(trace=st.one_of(workloads(gpu_share=0.6, gpus=SHARES),
                       bursts(gpu_share=0.6, gpus=(0, 0.05, 0.3, 0.47, 0.6, 1))), conf=configs)
def test_every_scheduler_with_gpu_shares(name, trace, conf):
    """Fractional GPU requests (thousandths of a GPU): capacity is never exceeded in any
    dimension, and the other invariants hold."""
    res = run(trace, make_scheduler(name), GPU, conf)
    check_invariants(trace, res)


# --- fast paths against general paths ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=3)
@given(trace=st.one_of(workloads(max_jobs=8), bursts()), conf=configs,
       cat=st.sampled_from([M4, CMR]))
def test_general_paths_decide_as_the_fast_paths(name, trace, conf, cat):
    """Every 2-D fast path (indexes, unrolled loops) against the general path on the same
    (cpu, mem) input: the same replay, to the last bit."""
    fast = comparable(run(trace, make_scheduler(name), cat, conf))
    with general_paths():
        general = comparable(run(trace, make_scheduler(name), cat, conf))
    assert fast == general


@pytest.mark.slow
@pytest.mark.parametrize("name", ["first-fit", "karpenter", "fleet", "scloud+pack", "scloud+pack+scale+clear"])
@settings(max_examples=5)
@given(trace=st.one_of(workloads(gpu_share=0.4), bursts(gpu_share=0.4)), conf=configs)
def test_gpu_index_answers_as_a_scan(name, trace, conf):
    """In 3-D, first fit's index checks GPUs on each slot its (cpu, mem) tree finds: the
    same decisions as a scan."""
    if name not in scheduler_names():
        pytest.skip(f"no scheduler {name}")
    fast = comparable(run(trace, make_scheduler(name), GPU, conf))
    with general_paths():
        general = comparable(run(trace, make_scheduler(name), GPU, conf))
    assert fast == general


# --- loaders, generators, describe ------------------------------------------------------

def test_generic_loader_reads_a_gpus_column(tmp_path):
    from stratus.traces import generic

    p = tmp_path / "jobs.csv"
    p.write_text("id,t,rt,c,m,g\n1,0,60,4,16,1\n2,5,60,1,2,0\n")
    opts = {"job_id": "id", "submit_s": "t", "runtime_s": "rt", "cpu": "c", "mem_gib": "m"}
    t = generic.load(p, **opts, gpus="g")
    assert t.column("gpus").tolist() == [1.0, 0.0]
    assert "gpus" not in generic.load(p, **opts).frame.columns
    p.write_text("id,t,rt,c,m,g\n1,0,60,4,16,-1\n")
    with pytest.raises(TraceError, match=r"jobs.csv:2: column .g. \(gpus\): must be >= 0"):
        generic.load(p, **opts, gpus="g")


def test_synthetic_gpu_share():
    from stratus.traces.describe import describe
    from stratus.traces.synthetic import generate

    base = generate("google", hours=1, seed=4, scale=0.05)
    same = generate("google", hours=1, seed=4, scale=0.05, gpu_share=0)
    pd.testing.assert_frame_equal(base.frame, same.frame)  # default off: unchanged
    assert same.name == base.name and "gpus" not in base.frame.columns
    g = generate("google", hours=1, seed=4, scale=0.05, gpu_share=0.3)
    assert g.name.endswith("gpu_share=0.3")
    on = g.frame["gpus"].to_numpy() > 0
    assert 0 < on.mean() < 0.7
    assert set(g.frame["gpus"][on]) <= {1.0, 2.0, 4.0, 8.0}
    cpu_rows = g.frame[~on].drop(columns="gpus").reset_index(drop=True)
    base_rows = base.frame[base.frame.set_index(["job_id", "task_id"]).index.isin(
        g.frame[~on].set_index(["job_id", "task_id"]).index)].reset_index(drop=True)
    pd.testing.assert_frame_equal(cpu_rows, base_rows)  # CPU-only jobs as they were
    assert fit_to_catalog(g, GPU, drop=False) is g  # every GPU shape fits some type
    d = describe(g)
    assert d["gpus"]["tasks"] == int(on.sum()) and d["offered_load"]["gpus"] > 0
    assert "gpus" not in describe(base)
    with pytest.raises(ConfigError, match="gpu_share"):
        generate("twosigma", hours=1, scale=0.05, gpu_share=1.5)
