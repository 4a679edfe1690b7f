import math

import pytest

from stratus.base.errors import ConfigError
from stratus.pricing.catalog import M4, M5, Catalog, InstanceType
from stratus.pricing.catalog_files import get_catalog
from stratus.pricing.prices import ON_DEMAND, RESERVED, PriceBook, PriceSeries


def test_m4_family_matches_stratus_fig3c():
    rows = [(t.name, t.vcpu, t.mem_gib, t.ondemand_hourly) for t in M4]
    assert rows == [("m4.large", 2, 8, 0.10), ("m4.xlarge", 4, 16, 0.20), ("m4.2xlarge", 8, 32, 0.40),
                    ("m4.4xlarge", 16, 64, 0.80), ("m4.10xlarge", 40, 160, 2.00),
                    ("m4.16xlarge", 64, 256, 3.20)]
    assert M4.max_capacity == (64_000, 256 * 1024)
    assert M4.smallest.name == "m4.large"


def test_m5_is_linear_with_three_year_reserved_rate():
    large = M5["m5.large"]
    assert large.ondemand_hourly == 0.096
    assert large.reserved_hourly * 3 * 365 * 24 == pytest.approx(988.0)
    for t in M5:
        k = t.vcpu / 2
        assert t.mem_gib == 8 * k
        assert t.ondemand_hourly == pytest.approx(0.096 * k)
        assert t.reserved_hourly == pytest.approx(large.reserved_hourly * k)
    assert M5.types[-1].name == "m5.24xlarge" and M5.types[-1].vcpu == 96


def test_catalog_errors_name_the_problem():
    with pytest.raises(ConfigError, match="unknown instance type 'm9.huge'"):
        M4["m9.huge"]
    with pytest.raises(ConfigError, match="unknown catalog"):
        get_catalog("c7")
    with pytest.raises(ConfigError, match="duplicate"):
        Catalog([InstanceType("a", 1, 1, 1), InstanceType("a", 2, 2, 2)])


def test_step_series_price_next_change_and_exact_integral():
    s = PriceSeries([100.0, 200.0, 400.0], [1.0, 3.0, 2.0])
    assert s.at(0) == 1.0 and s.at(100) == 1.0 and s.at(199.9) == 1.0 and s.at(200) == 3.0
    assert s.at(1e9) == 2.0
    assert s.next_change(50) == 100 and s.next_change(100) == 200 and math.isinf(s.next_change(400))
    # [150, 450]: 50 s at 1 + 200 s at 3 + 50 s at 2 = 750 $*s/h
    assert s.cost(150, 450) == pytest.approx(750 / 3600)
    assert s.cost(0, 50) == pytest.approx(50 / 3600)  # before the first change: first price
    assert s.cost(300, 300) == 0.0


def test_price_series_rejects_bad_input():
    with pytest.raises(ConfigError):
        PriceSeries([2.0, 1.0], [1.0, 1.0])
    with pytest.raises(ConfigError):
        PriceSeries([0.0], [-1.0])


def test_on_demand_book():
    book = PriceBook.on_demand(M5)
    assert book.price("m5.xlarge", ON_DEMAND, 12345.0) == pytest.approx(0.192)
    assert book.has("m5.large", RESERVED)
    assert math.isinf(book.next_change("m5.large", ON_DEMAND, 0.0))
    assert book.cost("m5.large", ON_DEMAND, 0, 3600) == pytest.approx(0.096)
    assert not PriceBook.on_demand(M4).has("m4.large", RESERVED)
