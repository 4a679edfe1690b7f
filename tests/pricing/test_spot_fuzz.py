"""Corrupt-file fuzz for the spot price loaders (issue 9), as tests/helpers/corrupt.py does for the
trace loaders: every damaged file either loads into valid step functions (finite positive
prices, increasing times) or fails as one StratusError naming the file; never a crash."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.base.errors import StratusError
from stratus.pricing.spot import load_spot_history, spot_price_book
from tests.helpers.corrupt import corrupt, ops
from tests.helpers.paths import FIXTURES

SPOT = FIXTURES / "spot"
FILES = {"history.csv": b",", "history.txt": b"\t", "history.json": b",",
         "concatenated.json": b",", "pages.json": b",", "history.tsv.gz": b"\t"}


def _check_loaded(hist) -> None:
    for name, s in hist.series.items():
        assert s.times.size and np.all(np.diff(s.times) > 0), name
        assert np.all(np.isfinite(s.prices)) and np.all(s.prices > 0), name


def _loads_or_names(path) -> None:
    """The file loads as valid prices, or fails with one line that names it."""
    try:
        hist = load_spot_history(path)
    except StratusError as exc:
        msg = str(exc)
        assert str(path) in msg and "\n" not in msg, msg
        return
    _check_loaded(hist)


@pytest.mark.slow
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
    _loads_or_names(path)


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
    from stratus.pricing.catalog import M4
    from stratus.pricing.spot import bundled_history

    _check_loaded(bundled_history())
    spot_price_book(M4, bundled_history())


# --- the compact Parquet format (pricing.spot.write_compact; the bundled trace) -----------

def _compact_bytes(tmp_path) -> bytes:
    """A small compact file: the CSV fixture's history written in the bundled format."""
    from stratus.pricing.spot import write_compact

    hist = load_spot_history(SPOT / "history.csv", zone="us-west-2a")
    units = {n: (s.times.astype(np.int64), np.round(s.prices * 10_000).astype(np.int64))
             for n, s in hist.series.items()}
    path = tmp_path / "small.parquet"
    write_compact(units, path, hist.origin, hist.zone or "us-west-2a")
    return path.read_bytes()


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=ops(("flip", "truncate", "non_utf8", "garbage_line")),
       suffix=st.sampled_from([".parquet", ".bin"]))
def test_a_corrupt_compact_parquet_loads_valid_prices_or_fails_naming_it(tmp_path, damage,
                                                                           suffix):
    """Byte damage anywhere in the file (footer, pages, metadata): found by its magic bytes
    or its suffix, read as the compact format or refused as one line naming it."""
    data = corrupt(_compact_bytes(tmp_path), damage, None)
    path = tmp_path / f"damaged{suffix}"
    path.write_bytes(data)
    _loads_or_names(path)


TABLE_DAMAGE = ("drop_column", "float_times", "string_prices", "null", "zero_price",
                "negative_price", "repeat_time", "reverse_times", "no_metadata", "bad_origin",
                "naive_origin", "metadata_not_json", "duplicate_type", "empty", "huge_time")


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(st.sampled_from(TABLE_DAMAGE), min_size=1, max_size=3),
       which=st.integers(0, 10**6))
def test_a_damaged_compact_table_loads_valid_prices_or_fails_naming_it(tmp_path, damage, which):
    """Well-formed Parquet with wrong content: every column, value and metadata fault the
    compact reader checks for."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "small.parquet"
    src.write_bytes(_compact_bytes(tmp_path))
    table = pq.read_table(src)
    meta = dict(table.schema.metadata or {})
    cols = {c: table.column(c).combine_chunks() for c in table.column_names}
    n = table.num_rows
    i = which % n
    for d in damage:
        if d in ("null", "zero_price", "negative_price", "repeat_time", "reverse_times",
                 "huge_time") and not all(len(v) for v in cols.values()):
            continue  # an emptied table has no value to damage
        if d == "drop_column" and cols:
            cols.pop(sorted(cols)[which % len(cols)])
        elif d == "float_times" and "t" in cols:
            cols["t"] = pa.array(cols["t"].to_numpy(zero_copy_only=False).astype(float) + 0.5)
        elif d == "string_prices" and "price" in cols:
            cols["price"] = pa.array([str(x) for x in cols["price"].to_pylist()])
        elif d == "null" and cols:
            c = sorted(cols)[which % len(cols)]
            vals = cols[c].to_pylist()
            vals[i % len(vals)] = None
            cols[c] = pa.array(vals, type=cols[c].type)
        elif d in ("zero_price", "negative_price") and "price" in cols \
                and pa.types.is_integer(cols["price"].type):
            vals = cols["price"].to_pylist()
            vals[i % len(vals)] = 0 if d == "zero_price" else -5
            cols["price"] = pa.array(vals, type=cols["price"].type)
        elif d in ("repeat_time", "reverse_times", "huge_time") and "t" in cols:
            vals = cols["t"].to_pylist()
            k = i % len(vals)
            if d == "repeat_time" and k:
                vals[k] = vals[k - 1]
            elif d == "reverse_times":
                vals = vals[::-1]
            else:
                vals[k] = 2**31 - 1
            cols["t"] = pa.array(vals, type=cols["t"].type)
        elif d == "no_metadata":
            meta = {}
        elif d in ("bad_origin", "naive_origin", "metadata_not_json"):
            try:
                info = json.loads(meta.get(b"stratus.spot", b"{}") or b"{}")
            except ValueError:  # already damaged
                info = {}
            info["origin"] = {"bad_origin": "yesterday", "naive_origin": "2017-06-05T00:00:00",
                              "metadata_not_json": info.get("origin")}[d]
            meta[b"stratus.spot"] = (b"{not json" if d == "metadata_not_json"
                                     else json.dumps(info).encode())
        elif d == "duplicate_type" and "type" in cols:
            col = cols["type"]
            if pa.types.is_dictionary(col.type):
                names = col.dictionary.to_pylist()
                names[-1] = names[0]
                cols["type"] = pa.DictionaryArray.from_arrays(col.indices, pa.array(names))
        elif d == "empty":
            cols = {c: v.slice(0, 0) for c, v in cols.items()}
    out = pa.table(cols) if cols else pa.table({"x": pa.array([], pa.int32())})
    out = out.replace_schema_metadata(meta)
    path = tmp_path / "damaged.parquet"
    pq.write_table(out, path)
    _loads_or_names(path)


def test_the_compact_reader_refuses_what_it_cannot_use(tmp_path):
    """The fuzz above can pass by loading everything: these must be refused."""
    import pyarrow.parquet as pq

    src = tmp_path / "small.parquet"
    src.write_bytes(_compact_bytes(tmp_path))
    table = pq.read_table(src)
    bad = tmp_path / "nometa.parquet"
    pq.write_table(table.replace_schema_metadata({}), bad)
    with pytest.raises(StratusError, match="lacks valid 'stratus.spot' metadata"):
        load_spot_history(bad)
    bad = tmp_path / "notype.parquet"
    pq.write_table(table.drop(["type"]), bad)
    with pytest.raises(StratusError, match="lacks column 'type'"):
        load_spot_history(bad)
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(src.read_bytes()[:-20])
    with pytest.raises(StratusError, match="cannot read as Parquet"):
        load_spot_history(bad)


@pytest.mark.slow
def test_a_compact_parquet_with_a_damaged_schema_is_one_line(tmp_path):
    """Found by the fuzz above: one flipped byte in the footer made pyarrow raise
    ArrowNotImplementedError (integers wider than 64 bits), which escaped as a crash."""
    data = bytearray(_compact_bytes(tmp_path))
    path = tmp_path / "flipped.parquet"
    for at in range(len(data) - 600, len(data) - 8):  # the footer: schema and metadata
        bad = data.copy()
        bad[at] ^= 0x20
        path.write_bytes(bytes(bad))
        _loads_or_names(path)
