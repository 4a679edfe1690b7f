"""Issue 35's messages: a value in a message reads as the user would write it (``inf``,
``1.5``), never as numpy's repr (``np.float64(inf)``), and numpy numbers given to the API
are taken as the numbers they are."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from stratus.app import spec as S
from stratus.base.errors import ConfigError, TraceError, plain, shown

SPECS = [c for c in vars(S).values()
         if isinstance(c, type) and issubclass(c, S.Spec) and c is not S.Spec]


def test_shown_is_the_plain_python_repr():
    assert shown(np.float64("inf")) == "inf" and shown(np.float64(1.5)) == "1.5"
    assert shown(np.int64(-3)) == "-3" and shown(np.bool_(True)) == "True"
    assert shown([np.float64(2.0), "a "]) == "[2.0, 'a ']"
    assert shown(np.array([1, 2])) == "[1, 2]" and shown(np.str_("x")) == "'x'"
    assert shown("a" * 50, 10) == "'aaaaaa..."
    assert plain((np.int64(1), {"k": np.float32(0.5)})) == (1, {"k": 0.5})


@pytest.mark.parametrize("cls", SPECS, ids=lambda c: c.__name__)
def test_no_option_error_shows_a_numpy_repr(cls):
    for f in fields(cls):
        for value in (np.float64("inf"), np.float64("nan"), np.int64(-3)):
            values = {"trace": "synthetic:google", f.name: value}
            try:
                cls.build(values)
            except ConfigError as exc:
                assert "np." not in str(exc), str(exc)


def test_numpy_numbers_are_taken_as_numbers():
    spec = S.ReplaySpec.build({"trace": "synthetic:google", "seed": np.int64(3),
                               "tick": np.float64(30.0), "hours": np.int32(2)})
    assert (spec.seed, spec.tick, spec.hours) == (3, 30.0, 2.0)
    assert type(spec.seed) is int
    with pytest.raises(ConfigError, match=r"got inf$"):
        S.ReplaySpec.build({"trace": "synthetic:google", "tick": np.float64("inf")})


@pytest.mark.parametrize("cell, words", [("inf", "not finite: inf"),
                                         ("1.5", "not an integer (or too large): 1.5")])
def test_a_trace_value_reads_as_written(tmp_path, cell, words):
    from stratus.traces import generic

    path = tmp_path / "t.csv"
    column = "NCPUS" if cell == "inf" else "JobID"
    row = {"JobID": "1", "Submit": "0", "Elapsed": "5", "NCPUS": "1", "Mem": "1", column: cell}
    path.write_text("JobID,Submit,Elapsed,NCPUS,Mem\n" + ",".join(row.values()) + "\n")
    with pytest.raises(TraceError) as exc:
        generic.load(path, job_id="JobID", submit_s="Submit", runtime_s="Elapsed",
                     cpu="NCPUS", mem_gib="Mem")
    assert str(exc.value).endswith(words) and "np." not in str(exc.value)


def test_an_swf_field_reads_as_written(tmp_path):
    from stratus.traces import swf

    path = tmp_path / "t.swf"
    fields_ = ["1", "0", "0", "10", "1", "-1", "-1", "1", "-1", "-1", "1", "1", "1", "1",
               "1", "-1", "-1", "-1"]
    fields_[3] = "1e400"  # run time: not finite
    path.write_text(" ".join(fields_) + "\n")
    with pytest.raises(TraceError) as exc:
        swf.load(path)
    assert "np." not in str(exc.value), str(exc.value)


def test_a_catalog_gpu_count_reads_as_written():
    from stratus.pricing.catalog import InstanceType

    with pytest.raises(ConfigError, match=r"got 1\.5$"):
        InstanceType("g.big", 4, 16, 1.0, gpus=np.float64(1.5))
