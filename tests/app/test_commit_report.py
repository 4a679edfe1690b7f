"""The report's "total bill against reserved capacity" (issue 23, item 6) from either sweep
command: the pipeline's waiting cells and the unified replay's cells in one folder."""

from __future__ import annotations

import pytest

from stratus.app.cli import main

UNIFIED = """command = "replay"
results = "{res}"
[[traces]]
label = "tiny"
spec = "synthetic:google?scale=0.005"
hours = 2
seeds = [1]
[[grid]]
scheduler = ["stratus"]
reserved = ["m4.2xlarge:1", "m4.2xlarge:2"]
waiting = ["njw", "ajw-t:b=300"]
[options]
reserved_discount = 0.6
"""

PIPELINE = """command = "waiting"
results = "{res}"
[[traces]]
label = "tiny"
spec = "synthetic:google?scale=0.005"
hours = 2
seeds = [1]
[[grid]]
policy = ["njw", "ajw-t", "ljw"]
s = [1, 2]
[options]
reserved_type = "m4.2xlarge"
catalog = "m4"
reserved_discount = 0.6
b = 300
t = 300
"""


@pytest.mark.slow
def test_both_sweep_commands_feed_the_bill_against_reserved_figure(tmp_path, capsys):
    from stratus.app.figures_waiting import commitment_figures
    from stratus.app.report_groups import comparable
    from stratus.app.sweep_store import read_rows

    res = tmp_path / "res"
    for name, text in (("unified.toml", UNIFIED), ("pipeline.toml", PIPELINE)):
        cfg = tmp_path / name
        cfg.write_text(text.format(res=res))
        assert main(["sweep", str(cfg), "--workers", "1", "--json"]) == 0
    df = read_rows(res, {})
    ok, _ = comparable(df[df["status"] == "ok"])
    (fig,) = commitment_figures(ok)
    series = {r["series"] for r in fig.table}
    assert series == {"njw, overflow smallest-vm (pipeline)",
                      "ajw-t, overflow smallest-vm (pipeline)",
                      "njw, overflow stratus (unified)", "ajw-t, overflow stratus (unified)"}
    assert {r["reserved vCPUs"] for r in fig.table} == {"8", "16"}  # ljw is not drawn
    # what ran on rented instances: the pool's share, the unified replay's ran-where
    # count (issue 36, item 4: not the gate's split)
    assert all(r["tasks run on cloud"].endswith("(n=1)") for r in fig.table), fig.table
    out = tmp_path / "report"
    assert main(["report", str(res), "-o", str(out)]) == 0
    assert (out / f"{fig.name}.png").stat().st_size > 0
    assert "Total bill against reserved capacity" in (out / "index.html").read_text()
