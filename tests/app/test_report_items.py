"""The report shows only what was run (issue 36, item 5): the paper's values only in the
paper's setting, Fig. 6 like with like, legends that do not squeeze the bars, and an
opening sentence per workload on who is cheapest. Built from hand-made result rows, so
every number is known; the browser check is tests/app/test_sweep.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from stratus.app import figures, paper
from stratus.app.figures_ablations import ablation_figures
from stratus.app.report_lead import lead, winner

GOOGLE = "synthetic:google?scale=0.005"


def _rows(costs: dict, trace: str = GOOGLE, label: str = "Google-like", catalog: str = "m4",
          market: str = "spot", windows: int = 2, step: float = 0.1) -> pd.DataFrame:
    """One replay row per scheduler and window: cost ``costs[name] * (1 + step * k)`` on
    window k."""
    rows = []
    for k in range(windows):
        for name, c in costs.items():
            spec = {"trace": trace, "catalog": catalog, "market": market, "scheduler": name,
                    "slice": k, "seed": 1, "hours": 1.0, "format": None, "reserved": None}
            rows.append({"command": "replay", "trace_label": label, "trace": trace,
                         "format": None, "slice": k, "slices": windows, "seed": 1,
                         "hours": 1.0, "code_version": "test", "spec_json": json.dumps(spec),
                         "opt_scheduler": name, "opt_market": market, "opt_catalog": catalog,
                         "total_cost_usd": c * (1 + step * k),
                         "utilization_constraining": 0.5, "latency_p50": 1.0,
                         "latency_p95": 2.0, "instances_acquired": 3.0,
                         "instances_cleared": 0.0})
    return pd.DataFrame(rows)


FOUR = {"stratus": 1.0, "fleet": 1.2, "hotspot": 1.5, "scloud": 2.0}


def _fig(figs, name):
    return next(f for f in figs if f.name == name)


def test_the_paper_setting_is_the_workload_m4_and_the_market_never_the_label():
    assert paper.setting({"trace": GOOGLE, "catalog": "m4", "market": "spot"}, "spot") == (
        "Google", "")
    assert paper.setting({"trace": "synthetic:twosigma", "market": "on-demand"},
                         "on-demand")[0] == "TwoSigma"
    assert paper.setting({"trace": "/data/g", "format": "google2011"}, "spot")[0] == "Google"
    for spec, why in [({"trace": "/tmp/google-like.csv"}, "not a workload the paper ran"),
                      ({"trace": GOOGLE, "catalog": "m5"}, "catalog m5"),
                      ({"trace": GOOGLE, "market": "on-demand"}, "market on-demand"),
                      ({"trace": GOOGLE, "reserved": "m4.large:1"}, "--reserved set")]:
        name, reason = paper.setting(spec, "spot")
        assert name is None and why in reason, (spec, reason)


def test_a_hand_written_csv_labelled_google_like_gets_no_paper_values():
    """Issue 36: a 12-task CSV labelled "Google-like" was drawn beside the paper's Fig. 4
    diamonds, Fig. 5's 86% and Table 2, because the label said "google"."""
    figs = figures.replay_figures(_rows(FOUR, trace="/tmp/twelve-tasks.csv"))
    for name in ("fig4-cost", "fig5-utilization", "table2-latency"):
        f = _fig(figs, name)
        assert all(v == "—" for r in f.table for k, v in r.items() if k.startswith("paper"))
        assert "No paper values for Google-like (/tmp/twelve-tasks.csv is not a workload" \
               in f.caption
    m5 = _fig(figures.replay_figures(_rows(FOUR, catalog="m5")), "fig4-cost")
    assert {r["paper"] for r in m5.table} == {"—"} and "catalog m5, the paper's is m4" \
        in m5.caption


def test_the_papers_values_name_their_setting_and_need_all_four_for_fig4():
    f = _fig(figures.replay_figures(_rows(FOUR)), "fig4-cost")
    assert {r["scheduler"]: r["paper"] for r in f.table} == paper.fig4_normalized("Google")
    assert "for Google-like (the paper's Google workload on m4 at spot prices" in f.caption
    three = figures.replay_figures(_rows({k: v for k, v in FOUR.items() if k != "fleet"}))
    assert {r["paper"] for r in _fig(three, "fig4-cost").table} == {"—"}
    assert "not all of stratus, fleet, hotspot and scloud ran" in _fig(three, "fig4-cost").caption
    assert _fig(three, "fig5-utilization").table[0]["paper"] == 0.86  # one bar, no pool


CHAIN = {"scloud": 2.0, "scloud+pack": 1.6, "scloud+pack+scale": 1.3,
         "scloud+pack+scale+clear": 0.9}


def test_fig6_compares_like_with_like_when_stratus_oracle_ran():
    """Issue 36: Stratus (history estimates) "saved" -13% over steps that have perfect
    runtimes. With stratus-oracle the bars are its saving, every run with perfect
    runtimes; Stratus's own saving is tabulated as the paper's quantity, steps marked."""
    f = _fig(ablation_figures(_rows({"stratus": 1.0, "stratus-oracle": 0.8, **CHAIN},
                                    step=0.0)), "fig6-ablation")
    last = [r for r in f.table if r["step"] == "scloud+pack+scale+clear †"][0]
    assert last["stratus-oracle saves (like with like)"].startswith("11.1% ± 0.0%")
    assert last["stratus saves (vs perfect runtimes †)"].startswith("-11.1%")
    assert last["paper (stratus vs the step)"] == "8%"
    assert "like with like" in f.caption and "no diamonds" in f.caption


def test_fig6_without_stratus_oracle_marks_every_step_a_reference():
    f = _fig(ablation_figures(_rows({"stratus": 1.0, **CHAIN}, step=0.0)), "fig6-ablation")
    assert [r["step"] for r in f.table] == [f"{n} †" for n in CHAIN]
    assert "every step is a reference given perfect runtimes" in f.caption
    assert "add stratus-oracle" in f.caption  # drawn: tests/app/test_sweep.py's report


@pytest.mark.parametrize("extra", ["", ", spot_prices=/data/spot/us-west-2-2017.csv"])
def test_long_group_labels_wrap_and_leave_the_bars_the_figures_width(extra):
    """Issue 36: a sweep over two catalogs gives labels such as "Google-like [catalog=...]";
    in a legend beside the axes they squeezed Figs. 4 and 5 to a sliver (axes 13% of the
    width), or, longer, the layout gave up and the legend ran off the figure (to 2x)."""
    import matplotlib.pyplot as plt

    long = {f"Google-like [catalog={c}{extra}, tick=120.0]":
            {"stratus": {"mean": 0.8, "std": 0.1, "n": 3}} for c in ("m4", "aws-2024-cmr-6i")}
    fig = figures._bars_figure(long, "cost", {}, "Fig. 4")
    fig.draw_without_rendering()  # the layout, no pixels
    (ax,) = fig.axes
    assert ax.get_position().width > 0.75  # of the figure's width
    (legend,) = fig.legends
    box = legend.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 >= 0  # all of it on the figure
    labels = [t.get_text() for t in legend.get_texts()]
    assert all(max(len(line) for line in lab.split("\n")) <= figures.LEGEND_WRAP
               for lab in labels)
    plt.close(fig)


def test_who_wins_is_the_cheapest_competitor_with_its_margin_and_spread():
    """The opening sentence: cheapest among competitors (stratus-oracle, a reference, is
    cheaper still and left out), its saving over the runner-up window by window."""
    df = _rows({"stratus": 1.0, "fleet": 1.25, "hotspot": 2.0, "stratus-oracle": 0.5},
               windows=2, step=0.0)
    df.loc[(df["opt_scheduler"] == "fleet") & (df["slice"] == 1), "total_cost_usd"] = 2.0
    w = winner(figures._replay(df))
    assert (w["winner"], w["runner_up"], w["cheapest_on"], w["windows"]) == (
        "stratus", "fleet", 2, 2)
    # savings 1 - 1/1.25 = 0.2 and 1 - 1/2 = 0.5: mean 0.35, sample sd 0.2121
    assert w["saving"]["mean"] == pytest.approx(0.35)
    assert w["saving"]["std"] == pytest.approx(0.212132, abs=1e-6)
    (sentence,) = lead(df)
    assert sentence.startswith("Google-like (spot, 2 windows): stratus is the cheapest of 3 "
                               "competitors, $1.00 a window on average, 35.0% ± 21.2% below "
                               "the runner-up fleet ($1.62;")
    assert "cheapest on 2 of 2" in sentence
    assert lead(_rows({"stratus-oracle": 1.0})) == [
        "Google-like (spot): only references ran (perfect runtimes), no competitor."]
