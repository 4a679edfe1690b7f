"""Corrupt-file fuzz for the spot price loaders (issue 9), as tests/corrupt.py does for the
trace loaders: every damaged file either loads into valid step functions (finite positive
prices, increasing times) or fails as one StratusError naming the file; never a crash."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from corrupt import corrupt, ops
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pricing.spot import load_spot_history, spot_price_book
from stratus.errors import StratusError

SPOT = Path(__file__).parent / "fixtures" / "spot"
FILES = {"history.csv": b",", "history.txt": b"\t", "history.json": b",",
         "concatenated.json": b",", "pages.json": b",", "history.tsv.gz": b"\t"}


def _check_loaded(hist) -> None:
    for name, s in hist.series.items():
        assert s.times.size and np.all(np.diff(s.times) > 0), name
        assert np.all(np.isfinite(s.prices)) and np.all(s.prices > 0), name


@pytest.mark.parametrize("name", sorted(FILES))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=ops(), gz=st.booleans())
def test_a_corrupt_spot_file_loads_valid_prices_or_fails_naming_it(tmp_path, name, damage, gz):
    raw = (SPOT / name).read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    data = corrupt(raw, damage, FILES[name])
    stem = name.removesuffix(".gz")
    path = tmp_path / (stem + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(data) if gz else data)
    try:
        hist = load_spot_history(path)
    except StratusError as exc:
        msg = str(exc)
        assert str(path) in msg and "\n" not in msg, msg
        return
    _check_loaded(hist)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(price=st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                       st.sampled_from(["0", "-0", "0.0", "-1e-300", "1e-320", "", "null",
                                        "true", "1e400", "0x10", "1_000"])))
def test_any_single_price_value_loads_valid_or_fails_naming_the_record(tmp_path, price):
    recs = [{"AvailabilityZone": "us-west-2a", "InstanceType": t, "ProductDescription":
             "Linux/UNIX", "SpotPrice": price if t == "m4.xlarge" else "0.05",
             "Timestamp": "2017-06-05T00:00:00Z"} for t in ("m4.large", "m4.xlarge")]
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"SpotPriceHistory": recs}))
    try:
        hist = load_spot_history(path)
    except StratusError as exc:
        assert f"{path}: record 2: field 'SpotPrice'" in str(exc), str(exc)
        return
    _check_loaded(hist)


def test_the_bundled_book_is_valid():
    from pricing.catalog import M4
    from pricing.spot import bundled_history

    _check_loaded(bundled_history())
    spot_price_book(M4, bundled_history())
