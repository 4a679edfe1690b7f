# %% [markdown]
# # Comparing schedulers on a real Google 2011 excerpt
#
# This example replays an excerpt of the Google cluster trace 2011 (every event of the
# jobs submitted in 20 minutes of trace time, bundled in `tests/data/google2011-excerpt`)
# under three schedulers on a simulated cloud (m4 instances, spot prices, per-second
# billing), and compares what each pays, how full it keeps its instances and how long jobs
# take.
#
# It is a jupytext "percent" script: run it as a script (`python
# examples/compare_schedulers.py` from the repository root), or open it as a notebook with
# jupytext. As a script, the figure is written to the file named by the environment
# variable `STRATUS_EXAMPLE_PLOT`, else to a temporary file.

# %%
import os
import sys
import tempfile
from pathlib import Path

import stratus


def repo_root() -> Path:
    """The checkout holding tests/data: found from this file, or from the working
    directory in a notebook (where __file__ is not defined)."""
    try:
        start = Path(__file__).resolve().parent
    except NameError:
        start = Path.cwd()
    for d in (start, *start.parents):
        if (d / "tests" / "data" / "google2011-excerpt").is_dir():
            return d
    raise FileNotFoundError("run this from a checkout of the Stratus repository")


ROOT = repo_root()

# %% [markdown]
# ## Load the trace
#
# `stratus.load_trace` takes a file or directory and its format (`stratus traces formats`
# lists them), or a synthetic spec such as `"synthetic:google?scale=0.05&hours=6"`.

# %%
trace = stratus.load_trace(str(ROOT / "tests" / "data" / "google2011-excerpt"),
                           format="google2011")

# %% [markdown]
# ## Compare three schedulers
#
# * `stratus`: the paper's policy (runtime binning, cost-efficient scale-out, instance
#   clearing, history-based runtime estimates);
# * `fleet`: Spot Fleet's `lowestPrice` acquisition with ECS `binpack` placement;
# * `hotspot`: HSpot, one task per instance of the cheapest type that fits, moving tasks to
#   types that became cheaper.
#
# The keyword options are `stratus compare`'s (`market`, `catalog`, `faults`, ...);
# `seed` seeds the spin-up delays and the estimator's noise (and a synthetic workload).
# `jobs=1` replays the three one after another in this process: they take seconds here.
# `jobs=N` spreads them over N worker processes, which start by importing the main
# module, so a script that does that keeps its top-level code under
# `if __name__ == "__main__":` (a notebook need not).

# %%
cmp = stratus.compare(trace, schedulers=["stratus", "fleet", "hotspot"], jobs=1, seed=1)

# %% [markdown]
# ## The table
#
# One row per scheduler. `normalized_cost` is the cost over the most expensive scheduler's
# on the window (Stratus Fig. 4; over the paper's four when all four ran, never Fargate:
# metrics.md, "Normalized cost"); `utilization` is the constraining resource's allocated share of what
# was billed (Fig. 5). `docs/reference/metrics.md` defines every figure.

# %%
table = cmp.table
print(table[["scheduler", "total_cost_usd", "normalized_cost", "utilization"]]
      .to_string(index=False))

# %% [markdown]
# What Stratus saves against each of the others:

# %%
cost = table.set_index("scheduler")["total_cost_usd"]
for name in cost.index.drop("stratus"):
    print(f"stratus saves {1 - cost['stratus'] / cost[name]:.1%} against {name}")

# %% [markdown]
# ## A plot
#
# `cmp.plot()` draws the normalized cost per scheduler and returns the matplotlib Axes.

# %%
import matplotlib  # noqa: E402

IN_NOTEBOOK = "ipykernel" in sys.modules
if not IN_NOTEBOOK:  # a script: draw off-screen
    matplotlib.use("Agg")

ax = cmp.plot()
ax.set_title("Google 2011 excerpt, spot, seed 1")
if not IN_NOTEBOOK:
    out = os.environ.get("STRATUS_EXAMPLE_PLOT") or os.path.join(
        tempfile.mkdtemp(prefix="stratus-example-"), "normalized_cost.png")
    ax.figure.savefig(out, dpi=120, bbox_inches="tight")
    print(f"figure: {out}")

# %% [markdown]
# ## One run in detail
#
# `stratus.replay` runs one scheduler and returns its result: `summary` (a dict), and the
# `instances` and `jobs` tables. Where did Stratus's bill go? The constraining resource's
# bill splits into progress, transfers, spin-up and idle capacity of several kinds.

# %%
res = stratus.replay(trace, scheduler="stratus", seed=1)
for part, share in res.summary["billed_breakdown"].items():
    if part != "resource":
        print(f"{part:24s} {share:7.1%}")
print(res.instances.groupby("type")["cost_usd"].sum().sort_values(ascending=False))
