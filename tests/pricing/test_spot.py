"""Spot price history: loaders, the bundled synthetic trace and its calibration (Stratus §2.1,
§3.3 footnote 2, §4.1), and fuzzing of every loader."""

import gzip
import json
import random
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.base.errors import ConfigError, TraceError
from stratus.pricing import synthetic_spot as ss
from stratus.pricing.catalog import M4, M5, Catalog, InstanceType
from stratus.pricing.prices import ON_DEMAND, SPOT, PriceSeries
from stratus.pricing.spot import (
    BUNDLED,
    SpotHistory,
    bundled_history,
    load_spot_history,
    read_compact_table,
    spot_price_book,
    write_aws,
)
from stratus.pricing.synthetic_spot import default_spot_book
from tests.helpers.paths import FIXTURES

FIX = FIXTURES / "spot"
FORMATS = ["history.json", "pages.json", "concatenated.json", "history.csv", "history.tsv.gz",
           "history.txt"]
ORIGIN = datetime(2017, 6, 5, tzinfo=UTC)
EXPECTED = {"m4.large": ([0, 600, 3600], [0.025, 0.0262, 0.0241]),
            "m4.xlarge": ([300, 1800, 2100], [0.05, 0.0511, 0.0488])}


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def _assert_valid(h: SpotHistory):
    assert isinstance(h, SpotHistory) and h.origin.tzinfo is not None
    assert h.series and h.report.rows_read >= sum(s.times.size for s in h.series.values())
    for s in h.series.values():
        assert np.all(np.diff(s.times) > 0)
        assert np.all(np.isfinite(s.prices)) and np.all(s.prices >= 0)


# --- loaders on fixtures --------------------------------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_gives_the_same_history(name):
    h = load_spot_history(FIX / name, zone="us-west-2a")
    assert h.origin == ORIGIN and h.zone == "us-west-2a" and h.product == "Linux/UNIX"
    assert h.types == ["m4.large", "m4.xlarge"]
    for itype, (times, prices) in EXPECTED.items():
        assert h.series[itype].times.tolist() == times
        assert h.series[itype].prices.tolist() == pytest.approx(prices, abs=1e-12)
    assert h.report.rows_read == 9
    assert h.report.dropped == {"product 'Windows' (not 'Linux/UNIX')": 1,
                                "zone 'us-west-2b' (not 'us-west-2a')": 1,
                                "exact duplicate records": 1}
    assert any("sorted" in n for n in h.report.notes)
    _assert_valid(h)


def test_several_zones_need_a_choice_and_unknown_zone_lists_the_present_ones():
    with pytest.raises(ConfigError, match=r"several zones \(us-west-2a, us-west-2b\)"):
        load_spot_history(FIX / "history.json")
    with pytest.raises(ConfigError, match=r"no records for zone 'us-west-2c'; present: us-west-2a"):
        load_spot_history(FIX / "history.csv", zone="us-west-2c")
    with pytest.raises(ConfigError, match="no records for product 'SUSE Linux'"):
        load_spot_history(FIX / "history.txt", zone="us-west-2a", product="SUSE Linux")
    with pytest.raises(ConfigError, match="several products"):
        load_spot_history(FIX / "history.txt", zone="us-west-2a", product=None)


def test_origin_option_shifts_times_and_must_be_timezone_aware():
    h = load_spot_history(FIX / "history.json", zone="us-west-2a", origin="2017-06-04T23:00:00Z")
    assert h.series["m4.large"].times.tolist() == [3600, 4200, 7200]
    with pytest.raises(ConfigError, match="timezone-aware"):
        load_spot_history(FIX / "history.json", zone="us-west-2a", origin=datetime(2017, 6, 5))
    with pytest.raises(ConfigError, match="unknown spot trace format"):
        load_spot_history(FIX / "history.json", fmt="xml")


def test_files_without_zone_or_product_columns_and_timestamp_spellings(tmp_path):
    p = _write(tmp_path, "h.csv", "instance_type,spot_price,timestamp\n"
                                  "m4.large,0.03,2017-06-05T00:00:01\n"
                                  "m4.large, 0.04 ,2017-06-05 00:00:02.5+00:00\n"
                                  "m4.large,0.03,2017-06-05T00:00:04.123456Z\n"
                                  "m4.large,0.03,2017-06-05T00:00:05-01:00\n")
    h = load_spot_history(p)
    assert h.zone is None and h.product == "Linux/UNIX"
    s = h.series["m4.large"]
    # 00:00:05-01:00 is 3604 s after the origin and repeats 0.03: not a change, dropped
    assert s.times.tolist() == pytest.approx([0, 1.5, 3.123456])
    assert s.prices.tolist() == [0.03, 0.04, 0.03]
    assert h.report.dropped == {"repeats the previous price of its type (no change)": 1}
    assert any("without a UTC offset" in n for n in h.report.notes)
    assert any("no AvailabilityZone" in n for n in h.report.notes)


def test_bare_record_list_and_numeric_prices(tmp_path):
    recs = [{"InstanceType": "m4.large", "SpotPrice": 0.03, "Timestamp": "2017-06-05T00:00:00Z"}]
    h = load_spot_history(_write(tmp_path, "r.json", json.dumps(recs)))
    assert h.series["m4.large"].prices.tolist() == [0.03]


# --- errors name the file, the line or record, and the field --------------------------


def _json(records):
    return json.dumps({"SpotPriceHistory": records})


def _rec(ts="2017-06-05T00:00:00Z", price="0.03", itype="m4.large"):
    return {"AvailabilityZone": "us-west-2a", "InstanceType": itype,
            "ProductDescription": "Linux/UNIX", "SpotPrice": price, "Timestamp": ts}


@pytest.mark.parametrize("records, pattern", [
    ([_rec(), _rec(ts="2017-06-05T00:01:00Z"), _rec(price="0.04")],
     r"record 1 and record 3: two prices for m4.large at the same time .*0.03 and 0.04"),
    ([_rec(), _rec(price="abc")], r"record 2: field 'SpotPrice': not a number: 'abc'"),
    ([_rec(price="-0.01")], r"record 1: field 'SpotPrice': negative"),
    ([_rec(price="Infinity")], r"record 1: field 'SpotPrice': not finite"),
    ([_rec(ts="June 5th")], r"record 1: field 'Timestamp': not an ISO 8601 time: 'June 5th'"),
    ([_rec(ts="2017-02-30T00:00:00Z")], r"record 1: field 'Timestamp': invalid or out-of-range"),
    ([_rec(), {k: v for k, v in _rec().items() if k != "SpotPrice"}],
     r"record 2: field 'SpotPrice' is missing"),
    ([_rec(), {**_rec(), "AvailabilityZone": ""}],
     r"record 2: field 'AvailabilityZone' is missing"),
    ([_rec(price=[1])], r"record 1: field 'SpotPrice' must be a string or number"),
    ([_rec(), 7], r"record 2: expected an object, got int"),
    ([], r"no spot price records"),
])
def test_json_errors_name_record_and_field(tmp_path, records, pattern):
    p = _write(tmp_path, "bad.json", _json(records))
    with pytest.raises(TraceError, match=pattern) as err:
        load_spot_history(p)
    assert str(err.value).startswith(str(p))


@pytest.mark.parametrize("name, text, pattern", [
    ("a.csv", "Timestamp,InstanceType,SpotPrice\n2017-06-05T00:00:00Z,m4.large,0.03\n"
              "2017-06-05T00:00:01Z,m4.large\n", r"line 3: expected 3 fields, got 2"),
    ("a.csv", "Timestamp,InstanceType,Price\n", r"line 1: header lacks column\(s\) SpotPrice"),
    ("a.csv", "Timestamp,InstanceType,SpotPrice,spot_price\n", r"duplicate column\(s\) SpotPrice"),
    ("a.tsv", "Timestamp\tInstanceType\tSpotPrice\n\n2017-06-05T00:00:00Z\tm4.large\tNaN\n",
     r"line 3: field 'SpotPrice': not a number"),
    ("a.csv", "Timestamp,InstanceType,SpotPrice\n2017-06-05T00:00:00Z,,0.1\n",
     r"line 2: field 'InstanceType' is missing"),
    ("a.csv", 'Timestamp,InstanceType,SpotPrice\n2017-06-05T00:00:00Z,"m4.large,0.1\n',
     r"line \d: unexpected end of data"),
    ("a.txt", "SPOTPRICEHISTORY\tus-west-2a\tm4.large\tLinux/UNIX\t0.03\n",
     r"line 1: expected 'SPOTPRICEHISTORY' and 5 tab-separated fields"),
    ("a.txt", "SPOTPRICEHISTORY\tus-west-2a\tm4.large\tLinux/UNIX\t0.03\t2017-06-05T00:00Z\n"
              "oops\n", r"line 2: expected 'SPOTPRICEHISTORY'"),
    ("a.json", '{"SpotPriceHistory": [\n{"SpotPrice": }]}', r"line 2, column 15: invalid JSON"),
    ("a.json", '{"NextToken": ""}', r"document 1: expected an object with a 'SpotPriceHistory'"),
    ("a.json", "[" * 100_000, r"invalid JSON"),
    ("a.csv", b"Timestamp,InstanceType,SpotPrice\n2017-06-05T00:00:00Z,m4.l\xe9rge,0.1\n",
     r"line 2: not UTF-8 text \(byte 0xe9\)"),
    ("a.csv", "", r"empty file"),
    ("a.csv.gz", gzip.compress(b"Timestamp,InstanceType,SpotPrice\n" * 50, mtime=0)[:40],
     r"truncated or corrupt gzip"),
    ("a.csv.gz", b"Timestamp,InstanceType,SpotPrice\n", r"named .gz but not gzip"),
    ("a.parquet", b"PAR1 not really", r"cannot read as Parquet"),
    ("missing/none.csv", None, r"cannot read"),
])
def test_text_errors_name_line_and_field(tmp_path, name, text, pattern):
    p = tmp_path / name if text is None else _write(tmp_path, name, text)
    with pytest.raises(TraceError, match=pattern) as err:
        load_spot_history(p)
    assert str(err.value).startswith(str(p))


# --- price books ----------------------------------------------------------------------


def test_spot_price_book_adds_spot_series_and_names_missing_types():
    h = load_spot_history(FIX / "history.json", zone="us-west-2a")
    cat = M4.subset(["m4.large", "m4.xlarge"])
    book = spot_price_book(cat, h, name="fixture")
    assert book.name == "fixture" and book.markets() == {ON_DEMAND, SPOT}
    assert book.price("m4.large", SPOT, 700) == pytest.approx(0.0262)
    assert book.price("m4.large", ON_DEMAND, 700) == 0.10
    with pytest.raises(ConfigError,
                       match=r"no prices for m4.2xlarge, m4.4xlarge, m4.10xlarge, m4.16xlarge"):
        spot_price_book(M4, h)
    # a plain mapping works too; types outside the catalog are ignored
    book2 = spot_price_book(cat, {"m4.large": PriceSeries.constant(0.02),
                                  "m4.xlarge": PriceSeries.constant(0.04),
                                  "c5.9xlarge": PriceSeries.constant(1)})
    assert book2.price("m4.xlarge", SPOT, 0) == 0.04


@pytest.mark.slow
def test_default_spot_book_is_the_bundled_trace_for_m4_and_generated_for_others():
    book = default_spot_book()
    assert book.markets() == {ON_DEMAND, SPOT}
    for t in M4:
        assert book.price(t.name, ON_DEMAND, 0) == t.ondemand_hourly
        assert 0 < book.price(t.name, SPOT, 0) < t.ondemand_hourly
        assert book.next_change(t.name, SPOT, 0) < 3600
        assert book.series(t.name, SPOT) is bundled_history().series[t.name]
    m5 = default_spot_book(M5)  # not in the bundled trace: the same model, generated
    for t in M5:
        assert 0 < m5.price(t.name, SPOT, 0) < t.ondemand_hourly
        assert m5.next_change(t.name, SPOT, 0) < 3600
    assert m5.series("m5.large", SPOT) is default_spot_book(M5).series("m5.large", SPOT)


# --- the bundled trace and the generator's calibration --------------------------------


@pytest.mark.slow
def test_bundled_file_is_exactly_what_the_generator_makes():
    table, info = read_compact_table(BUNDLED)
    assert info["origin"] == "2017-06-05T00:00:00Z" and info["zone"] == "us-west-2a"
    assert info == {**info, **ss.generator_meta(M4, ss.BUNDLED_DAYS, ss.BUNDLED_SEED, None)}
    units = ss.generate_units(M4, ss.BUNDLED_DAYS, ss.BUNDLED_SEED)
    assert table.column("type").to_pylist() == [n for n, (t, _) in units.items() for _ in t]
    times = np.concatenate([t for t, _ in units.values()])
    prices = np.concatenate([u for _, u in units.values()])
    assert np.array_equal(table.column("t").to_numpy(), times)
    assert np.array_equal(table.column("price").to_numpy(), prices)
    assert BUNDLED.stat().st_size < 1_000_000
    h = bundled_history()
    assert h.origin == ORIGIN and h.types == sorted(t.name for t in M4)


@pytest.fixture(scope="module")
def bundled_cal():
    return ss.calibration(bundled_history().series, M4, ss.BUNDLED_DAYS)


@pytest.mark.slow
def test_discount_is_70_to_80_percent(bundled_cal):
    # Stratus §2.1: spot "typically remains 70-80% below" on-demand.
    for name, r in bundled_cal["mean_ratio"].items():
        assert 0.2 <= r <= 0.3, name
    assert bundled_cal["all_in_band"] >= 0.75


@pytest.mark.slow
def test_m4_ordering_changes_about_850_per_day(bundled_cal):
    # Stratus §3.3 footnote 2: the sorted order of cost-per-vCore changes 850 times/day.
    assert 700 <= bundled_cal["ordering_changes_per_day"] <= 1000


@pytest.mark.slow
def test_spikes_about_one_per_type_per_month_lasting_minutes_to_an_hour(bundled_cal):
    # Stratus §3.3: bidding on-demand makes revocations rare (HotSpot: ~25 days apart).
    assert all(1 <= n <= 6 for n in bundled_cal["spikes"].values())
    assert 0.5 <= bundled_cal["spikes_per_type_per_month"] <= 2
    assert all(60 <= d <= 3600 for d in bundled_cal["spike_durations_s"])


def test_prices_are_whole_hundredths_of_a_cent_and_change_at_every_event():
    for itype, s in bundled_history().series.items():
        # exactly the doubles that parsing AWS's six-decimal strings gives
        assert np.array_equal(s.prices, np.rint(s.prices * 1e4) / 1e4), itype
        assert np.all(s.prices[1:] != s.prices[:-1]) and np.all(s.times == np.rint(s.times))
        assert s.times[0] == 0 and s.times[-1] < 90 * 86400


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 99])
def test_calibration_holds_for_other_seeds(seed):
    cal = ss.calibration(ss.generate_spot(M4, 90, seed), M4, 90)
    assert all(0.2 <= r <= 0.3 for r in cal["mean_ratio"].values())
    assert 700 <= cal["ordering_changes_per_day"] <= 1000
    assert 0.5 <= cal["spikes_per_type_per_month"] <= 2


def test_generator_is_deterministic_and_per_type():
    a = ss.generate_units(M4, 3, 5)
    b = ss.generate_units(M4.subset(["m4.2xlarge"]), 3, 5)
    assert np.array_equal(a["m4.2xlarge"][0], b["m4.2xlarge"][0])
    assert np.array_equal(a["m4.2xlarge"][1], b["m4.2xlarge"][1])
    c = ss.generate_units(M4, 3, 6)
    assert not np.array_equal(a["m4.large"][1][:50], c["m4.large"][1][:50])
    with pytest.raises(ConfigError):
        ss.generate_spot(days=0)
    with pytest.raises(ConfigError):
        ss.generate_spot(sigma=-1)
    with pytest.raises(ConfigError, match="unexpected keyword"):
        ss.generate_spot(nonsense=1)


def test_ordering_change_definition_on_a_small_example():
    # m4.large (2 vCPU) and m4.xlarge (4 vCPU); events at 10 (both at once), 20, 30, 40.
    cat = M4.subset(["m4.large", "m4.xlarge"])
    large = PriceSeries([0, 10, 30], [0.02, 0.03, 0.02])       # per vCPU .010 .015 .010
    xlarge = PriceSeries([0, 10, 20, 40], [0.05, 0.06, 0.05, 0.04])  # .0125 .015 .0125 .010
    # 0: large<xlarge. 10: tie .015 -> catalog order: no change. 20: xlarge cheaper: change.
    # 30: large cheaper: change. 40: tie .010 -> large first: no change.
    count, per_day = ss.ordering_changes({"m4.large": large, "m4.xlarge": xlarge}, cat, 0, 86400)
    assert count == 2 and per_day == 2


def test_spikes_are_maximal_intervals_above_on_demand():
    s = PriceSeries([0, 100, 160, 200, 500], [0.02, 0.5, 0.3, 0.02, 0.11])
    assert ss.spikes(s, 0.10, end_s=800) == [(100.0, 100.0), (500.0, 300.0)]


@pytest.mark.slow
def test_cli_writes_each_format_and_they_round_trip(tmp_path, capsys):
    want = ss.generate_spot(M4, 1, 3)
    for name in ["x.parquet", "x.csv", "x.tsv.gz", "x.json", "x.txt"]:
        assert ss.main(["--out", str(tmp_path / name), "--days", "1", "--seed", "3"]) == 0
        h = ss.load_spot(tmp_path / name)
        assert h.origin == ORIGIN and h.zone == "us-west-2a" and h.product == "Linux/UNIX"
        for itype, s in want.items():
            assert np.array_equal(h.series[itype].times, s.times), (name, itype)
            assert np.allclose(h.series[itype].prices, s.prices, rtol=0, atol=1e-12)
    assert "ordering changes" in capsys.readouterr().out
    assert ss.main(["--out", str(tmp_path / "x.xml"), "--days", "1"]) == 2


def test_write_aws_then_load_with_another_origin(tmp_path):
    series = {"m4.large": PriceSeries([0, 90.5], [0.02, 0.0301])}
    write_aws(series, tmp_path / "w.json", ORIGIN, "us-east-1a", "Linux/UNIX")
    h = load_spot_history(tmp_path / "w.json", origin="2017-06-05T00:00:10+00:00")
    assert h.series["m4.large"].times.tolist() == [-10, 80.5] and h.zone == "us-east-1a"


# --- fuzzing: corrupt input gives a valid history or a TraceError, nothing else --------


def _flip(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(r.randint(1, 4)):
        b[r.randrange(len(b))] = r.randrange(256)
    return bytes(b)


def _garbage_line(data: bytes, r: random.Random) -> bytes:
    lines = data.split(b"\n")
    junk = bytes(r.randrange(256) for _ in range(r.randint(0, 30))).replace(b"\n", b" ")
    lines.insert(r.randrange(len(lines) + 1), junk)
    return b"\n".join(lines)


def _drop_field(data: bytes, r: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = r.randrange(len(lines))
    for sep in (b"\t", b",", b'": '):
        parts = lines[i].split(sep)
        if len(parts) > 1:
            del parts[r.randrange(len(parts))]
            lines[i] = sep.join(parts)
            break
    else:
        del lines[i]
    return b"\n".join(lines)


def _drop_json_key(data: bytes, r: random.Random) -> bytes:
    try:
        doc = json.loads(data)
        rec = r.choice(doc["SpotPriceHistory"])
        del rec[r.choice(sorted(rec))]
    except (ValueError, TypeError, KeyError, IndexError):
        return data  # not (any more) the JSON fixture: leave it to the other corruptions
    return json.dumps(doc).encode()


def _non_utf8(data: bytes, r: random.Random) -> bytes:
    i = r.randrange(len(data) + 1)
    return data[:i] + bytes([r.randrange(0x80, 0x100)]) + data[i:]


def _truncate(data: bytes, r: random.Random) -> bytes:
    return data[:r.randrange(len(data))]


def _truncated_gzip(data: bytes, r: random.Random) -> bytes:
    z = gzip.compress(data, mtime=0)
    return z[:r.randrange(len(z))]


CORRUPTIONS = [_flip, _garbage_line, _drop_field, _non_utf8, _truncate, _truncated_gzip]
FUZZ_FILES = {"history.json": "h.json", "history.csv": "h.csv", "history.txt": "h.txt",
              "history.tsv.gz": "h.tsv"}


def _load_corrupted(fixture: str, corruptions, seed: int) -> None:
    data = (FIX / fixture).read_bytes()
    if fixture.endswith(".gz"):
        data = gzip.decompress(data)
    r = random.Random(seed)
    gz = False
    for corrupt in corruptions:
        if corrupt is _truncated_gzip:
            gz = True
        elif data:
            data = corrupt(data, r)
    if gz:
        data = _truncated_gzip(data, r)
    name = FUZZ_FILES[fixture] + (".gz" if gz else "")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        try:
            h = load_spot_history(p, zone="us-west-2a")
        except TraceError as exc:
            assert str(exc).startswith(str(p)), exc
            return
        except ConfigError as exc:
            # Only the options can be at fault: the corrupted file lost every record of
            # the requested zone or product.
            assert "no records for" in str(exc), exc
            return
        _assert_valid(h)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(FUZZ_FILES))
@settings(max_examples=60)
@given(corruptions=st.lists(st.sampled_from([*CORRUPTIONS, _drop_json_key]), min_size=1,
                            max_size=3),
       seed=st.integers(0, 2**32 - 1))
def test_fuzzed_loaders_give_history_or_trace_error(fixture, corruptions, seed):
    _load_corrupted(fixture, corruptions, seed)


@settings(max_examples=60)
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".json", ".csv", ".tsv", ".txt", ""]))
def test_arbitrary_bytes_give_history_or_trace_error(data, suffix):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"x{suffix}"
        p.write_bytes(data)
        try:
            _assert_valid(load_spot_history(p, zone="us-west-2a"))
        except TraceError:
            pass
        except ConfigError as exc:
            assert "no records for" in str(exc), exc


def test_fuzz_helpers_really_corrupt():
    r = random.Random(0)
    data = (FIX / "history.csv").read_bytes()
    assert all(c(data, r) != data for c in (_garbage_line, _drop_field, _non_utf8, _truncate))
    j = (FIX / "history.json").read_bytes()
    keys = sum(len(rec) for rec in json.loads(_drop_json_key(j, r))["SpotPriceHistory"])
    assert keys == 9 * 5 - 1


def test_far_apart_dates_and_origins(tmp_path):
    # 1700 and 2200 are 500 years apart: more than int64 nanoseconds can span.
    p = _write(tmp_path, "far.csv", "Timestamp,InstanceType,SpotPrice\n"
                                    "1700-01-01T00:00:00Z,m4.large,0.01\n"
                                    "2200-01-01T00:00:00.5Z,m4.large,0.02\n")
    t = load_spot_history(p).series["m4.large"].times
    span = (datetime(2200, 1, 1) - datetime(1700, 1, 1)).total_seconds()
    assert t[0] == 0 and t[1] == span + 0.5
    for bad in ("3000-01-01T00:00:00Z", "1000-01-01"):
        q = _write(tmp_path, "b.csv", f"Timestamp,InstanceType,SpotPrice\n{bad},m4.large,0.01\n")
        with pytest.raises(TraceError, match=r"line 2: field 'Timestamp': invalid or out-of-range"):
            load_spot_history(q)
    with pytest.raises(ConfigError, match="outside the years"):
        load_spot_history(p, origin=datetime(1, 1, 1, tzinfo=UTC))


# --- any catalog: several families, prices not linear in size, GPU-like prices ---------

# Approximate 2017 us-west-2 Linux on-demand $/h (test data, not a published table).
C4 = [("c4.large", 2, 3.75, 0.10), ("c4.xlarge", 4, 7.5, 0.199), ("c4.2xlarge", 8, 15, 0.398),
      ("c4.4xlarge", 16, 30, 0.796), ("c4.8xlarge", 36, 60, 1.591)]
R4 = [("r4.large", 2, 15.25, 0.133), ("r4.xlarge", 4, 30.5, 0.266),
      ("r4.2xlarge", 8, 61, 0.532), ("r4.4xlarge", 16, 122, 1.064),
      ("r4.8xlarge", 32, 244, 2.128), ("r4.16xlarge", 64, 488, 4.256)]
# GPU-like: high prices, one family linear in size (p3), one not (g5); illustrative figures.
GPU = [("p3.2xlarge", 8, 61, 3.06), ("p3.8xlarge", 32, 244, 12.24),
       ("p3.16xlarge", 64, 488, 24.48), ("g5.xlarge", 4, 16, 1.006),
       ("g5.2xlarge", 8, 32, 1.212), ("g5.4xlarge", 16, 64, 1.624),
       ("g5.8xlarge", 32, 128, 2.448), ("g5.12xlarge", 48, 192, 5.672),
       ("g5.16xlarge", 64, 256, 4.096), ("g5.24xlarge", 96, 384, 8.144),
       ("g5.48xlarge", 192, 768, 16.288)]


def _cat(rows, name, extra=()):
    return Catalog([InstanceType(n, c, m, p, family=n.split(".")[0]) for n, c, m, p in rows]
                   + list(extra), name=name)


CMR = _cat(C4 + R4, "cmr", M4)
GPUS = _cat(GPU, "gpu")
DAYS = 30


@pytest.fixture(scope="module")
def cmr_cal():
    return ss.calibration(ss.generate_spot(CMR, DAYS, ss.BUNDLED_SEED), CMR, DAYS)


@pytest.fixture(scope="module")
def gpu_cal():
    return ss.calibration(ss.generate_spot(GPUS, DAYS, ss.BUNDLED_SEED), GPUS, DAYS)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["cmr", "gpu"])
def test_discount_and_spikes_hold_for_every_type_of_a_multi_family_catalog(which, request):
    cal = request.getfixturevalue(f"{which}_cal")
    # §2.1 band for every type, and every type in it at once most of the time
    assert all(0.2 <= r <= 0.3 for r in cal["mean_ratio"].values()), cal["mean_ratio"]
    assert cal["all_in_band"] >= 0.75
    assert all(f["all_in_band"] >= 0.75 for f in cal["families"].values())
    # §3.3: about one spike per type per month, minutes to an hour
    assert all(1 <= n <= 2 for n in cal["spikes"].values())
    assert 0.5 <= cal["spikes_per_type_per_month"] <= 2
    assert all(60 <= d <= 3600 for d in cal["spike_durations_s"])


@pytest.mark.slow
def test_ordering_churn_within_families_and_across_the_catalog(cmr_cal, gpu_cal):
    fam = cmr_cal["families"]
    assert list(fam) == ["c4", "m4", "r4"] and [f["types"] for f in fam.values()] == [5, 6, 6]
    # §3.3 footnote 2 holds for each family priced like m4 (six types, equal $/vCPU)
    for f in ("m4", "r4"):
        assert 700 <= fam[f]["ordering_changes_per_day"] <= 1000, f
    # c4.8xlarge is 11% cheaper per vCPU: c4 crosses less, but still hundreds of times a day
    assert 300 <= fam["c4"]["ordering_changes_per_day"] < fam["m4"]["ordering_changes_per_day"]
    # the whole order changes at least as often as any family's (a change inside a family
    # is a change of the whole order): with c4's and m4's $/vCPU 0.5% apart, far more
    assert cmr_cal["ordering_changes_per_day"] >= 3 * fam["m4"]["ordering_changes_per_day"]
    for cal in (cmr_cal, gpu_cal):
        whole = cal["ordering_changes"]
        assert all(whole >= f["ordering_changes"] for f in cal["families"].values())
    # GPU-like: p3 (3 types) and g5 (8 types, $/vCPU far apart) churn, less than m4
    assert set(gpu_cal["families"]) == {"p3", "g5"}
    assert all(50 <= f["ordering_changes_per_day"] < 700 for f in gpu_cal["families"].values())


def test_gpu_prices_are_quantised_below_on_demand_between_spikes():
    series = ss.generate_spot(GPUS, 5, 7)
    for t in GPUS:
        s = series[t.name]
        assert np.array_equal(s.prices, np.rint(s.prices * 1e4) / 1e4), t.name
        assert np.all(s.prices[1:] != s.prices[:-1]) and s.times[0] == 0
        base = s.prices[s.prices <= t.ondemand_hourly]
        assert base.size >= s.prices.size - 2 and base.min() > 0.1 * t.ondemand_hourly


@pytest.mark.slow
def test_m4_types_get_the_bundled_series_in_any_catalog():
    gen = ss.synthetic_series(CMR)
    h = bundled_history()
    for t in M4:
        assert np.array_equal(gen[t.name].times, h.series[t.name].times)
        assert np.array_equal(gen[t.name].prices, h.series[t.name].prices)
    # cached per contents: the same series objects, whatever the catalog is called
    again = ss.synthetic_series(Catalog(list(CMR), name="other-name"))
    assert all(again[n] is gen[n] for n in gen)


def test_family_parameters_change_only_their_family():
    base = ss.generate_units(CMR, 2, 3)
    own = ss.generate_units(CMR, 2, 3, families={"c4": ss.SpotModel(ratio=0.28, sigma=0.05)})
    for t in CMR:
        same = (np.array_equal(base[t.name][0], own[t.name][0])
                and np.array_equal(base[t.name][1], own[t.name][1]))
        assert same == (t.family != "c4"), t.name
    cal = ss.calibration(ss.to_series(own), CMR, 2)
    assert all(0.26 <= cal["mean_ratio"][n] <= 0.30 for n, *_ in C4)
    meta = ss.generator_meta(CMR, 2, 3, None, {"c4": ss.SpotModel(ratio=0.28)})
    assert set(meta["generator"]["families"]) == {"c4"}
    assert "families" not in ss.generator_meta(CMR, 2, 3, None)["generator"]
    with pytest.raises(ConfigError, match="family 'r4'"):
        ss.generate_units(CMR, 1, 3, families={"r4": ss.SpotModel(ratio=2)})
    with pytest.raises(ConfigError, match="family 'r4' must be a SpotModel, got dict"):
        ss.generate_units(CMR, 1, 3, families={"r4": {"ratio": 0.3}})


def test_family_defaults_to_the_name_prefix_and_unknown_families_use_the_default():
    t = InstanceType("x9.big", 4, 8, 0.5)
    assert ss.family_of(t) == "x9" and ss.family_of(M4["m4.large"]) == "m4"
    assert ss.family_models(Catalog([t]))["x9"] == ss.SpotModel()


@st.composite
def _catalogs(draw):
    """Two or three families of 1-4 types, any vCPU counts, prices from cents to $30/h."""
    types = []
    for f in range(draw(st.integers(2, 3))):
        for k in range(draw(st.integers(1, 4))):
            types.append(InstanceType(f"f{f}.s{k}", draw(st.integers(1, 96)), 4.0,
                                      draw(st.integers(100, 300_000)) / 1e4, family=f"f{f}"))
    return Catalog(types, name="drawn")


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(cat=_catalogs(), seed=st.integers(0, 2**31))
def test_any_catalog_gives_quantised_per_type_series(cat, seed):
    series = ss.generate_spot(cat, 0.5, seed)
    for t in cat:
        s = series[t.name]
        assert np.array_equal(s.prices, np.rint(s.prices * 1e4) / 1e4)
        assert np.all(np.diff(s.times) > 0) and np.all(s.prices > 0)
    # a type's series does not depend on the others (its own stream, its family's model)
    first = cat.types[0]
    alone = ss.generate_spot(Catalog([first]), 0.5, seed)[first.name]
    assert np.array_equal(alone.prices, series[first.name].prices)
    cal = ss.calibration(series, cat, 0.5)
    assert all(cal["ordering_changes"] >= f["ordering_changes"]
               for f in cal["families"].values())


# --- real histories for any type names -----------------------------------------------


def _history_records(names, zone="us-west-2a"):
    return [_rec(ts=f"2017-06-05T0{h}:00:00Z", price=f"{0.01 * (i + 1) + 0.001 * h:.4f}",
                 itype=n) | {"AvailabilityZone": zone} for i, n in enumerate(names)
            for h in range(3)]


def test_hand_made_history_for_other_families_json_and_parquet(tmp_path):
    cat = CMR.subset(["c4.large", "r4.xlarge", "c4.8xlarge"])
    names = ["c4.large", "r4.xlarge", "c4.8xlarge", "x1.32xlarge"]  # one extra: ignored
    js = _write(tmp_path, "cr.json", _json(_history_records(names)))
    h = load_spot_history(js)
    book = spot_price_book(cat, h)
    assert book.price("r4.xlarge", SPOT, 3601) == pytest.approx(0.021)
    assert not book.has("x1.32xlarge", SPOT)
    pq = tmp_path / "cr.parquet"
    ss.save_spot(h.series, pq)
    book2 = spot_price_book(cat, ss.load_spot(pq))
    for t in cat:
        assert np.array_equal(book2.series(t.name, SPOT).prices, h.series[t.name].prices)
    # a type of the catalog the file lacks: one error naming the file and the types
    short = _write(tmp_path, "short.json", _json(_history_records(["c4.large"])))
    with pytest.raises(ConfigError, match=r"short.json: spot price history has no prices for "
                                          r"r4.xlarge, c4.8xlarge \(catalog"):
        spot_price_book(cat, load_spot_history(short))


@pytest.mark.slow
def test_cli_replay_on_a_catalog_without_bundled_prices(tmp_path, capsys):
    from stratus.app.cli import main

    argv = ["replay", "--trace", "synthetic:google?scale=0.05", "--hours", "1", "--json",
            "--catalog", "m5"]
    # spot without --spot-prices: the synthetic model for m5, never on-demand prices
    assert main(argv) == 0
    spot = json.loads(capsys.readouterr().out)
    assert spot["market"] == "spot" and spot["cost_by_market"].keys() == {"spot"}
    assert main([*argv, "--market", "on-demand"]) == 0
    od = json.loads(capsys.readouterr().out)
    assert 0.2 * od["total_cost_usd"] < spot["total_cost_usd"] < 0.35 * od["total_cost_usd"]
    # a hand-made history for m5's types (plus one the catalog lacks) ...
    names = [t.name for t in M5]
    full = _write(tmp_path, "m5.json", _json(_history_records([*names, "c5.9xlarge"])))
    assert main([*argv, "--spot-prices", str(full)]) == 0
    assert json.loads(capsys.readouterr().out)["cost_by_market"].keys() == {"spot"}
    # ... and one that misses two types: one line, exit 2, naming the file and the types
    short = _write(tmp_path, "short.csv", "Timestamp,InstanceType,SpotPrice\n" + "".join(
        f"2017-06-05T00:00:00Z,{n},0.05\n" for n in names[:-2]))
    assert main([*argv, "--spot-prices", str(short)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{short}: spot price history has no prices for " \
        "m5.16xlarge, m5.24xlarge (catalog 'm5')" in err


def test_generator_cli_takes_any_known_catalog(tmp_path, capsys):
    out = tmp_path / "m5.parquet"
    assert ss.main(["--out", str(out), "--days", "2", "--seed", "4", "--catalog", "m5"]) == 0
    assert "ordering changes" in capsys.readouterr().out
    h = ss.load_spot(out)
    assert h.types == sorted(t.name for t in M5)
    assert h.meta["generator"]["catalog"] == "m5"
    want = ss.generate_spot(M5, 2, 4)
    assert all(np.array_equal(h.series[n].prices, want[n].prices) for n in want)
    assert ss.main(["--out", str(out), "--catalog", "z9"]) == 2
    assert "unknown catalog 'z9'" in capsys.readouterr().err


def test_compact_file_holds_more_than_127_types(tmp_path):
    series = {f"z{i}.large": PriceSeries([0, 60], [(100 + i) / 1e4, 0.02]) for i in range(130)}
    ss.save_spot(series, tmp_path / "many.parquet")
    h = ss.load_spot(tmp_path / "many.parquet")
    assert len(h.series) == 130
    assert h.series["z129.large"].prices.tolist() == [0.0229, 0.02]
