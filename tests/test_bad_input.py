"""Issue 9's defects, one regression test each: bad input ends in a result or in one clear
line (exit 2), never a traceback, a loop or a destroyed file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratus.app.cli import main

FIX = Path(__file__).parent / "fixtures"
SWF = FIX / "swf" / "small.swf"


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_one_line_error(code, out, err, *needles):
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, err


# --- defect 2: an empty trace or window ----------------------------------------------------

@pytest.fixture
def empty_parquet(tmp_path):
    import pyarrow.parquet as pq

    from traces.spec import TraceSource

    full = tmp_path / "full.parquet"
    TraceSource(str(SWF)).full().to_parquet(full)
    empty = tmp_path / "empty.parquet"
    pq.write_table(pq.read_table(full).slice(0, 0), empty)
    return empty


@pytest.mark.parametrize("window", [["--hours", "0"], ["--start", "1e12"], []])
def test_empty_window_is_an_empty_result_with_zero_cost(capsys, empty_parquet, window):
    trace = SWF if window else empty_parquet
    for extra in ([], ["--json"]):
        code, out, err = run_cli(capsys, "replay", "--trace", trace, *window, "--no-progress",
                                 *extra)
        assert code == 0 and "Traceback" not in err, err
        if extra:
            doc = json.loads(out)
            assert doc["tasks"] == 0 and doc["total_cost_usd"] == 0.0
        else:
            assert "total cost ($)" in out and "0.00" in out
