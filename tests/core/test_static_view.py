"""``stratus.testing.StaticView``, the test double for policy authors (issue 21, item 5):
it offers everything the engine's ClusterView does, and the built-in schedulers decide on
it as they do in a replay."""

from __future__ import annotations

import inspect

import pytest

from stratus.app.registry import make_scheduler
from stratus.base.errors import DecisionError
from stratus.sim.view import ClusterView
from stratus.testing import StaticView, task


def _public(cls) -> dict:
    return {n: m for n, m in vars(cls).items() if not n.startswith("_")}


def test_it_offers_every_part_of_the_cluster_view():
    mine = {n for n in dir(StaticView()) if not n.startswith("_")}
    missing = sorted(set(_public(ClusterView)) - mine)
    assert missing == []
    for name, member in _public(ClusterView).items():  # the same arguments
        if inspect.isfunction(member):
            a = list(inspect.signature(member).parameters)
            b = list(inspect.signature(getattr(StaticView, name)).parameters)
            assert a == b, name


def test_runtime_arithmetic_is_the_views():
    v = StaticView()
    t = task(0, cpu=2, mem=8)
    a = v.add_instance("m4.xlarge", tasks=[(t, 600.0, 3600.0)])
    assert v.remaining(t) == 3000.0 and v.instance_remaining(a) == 3000.0
    late = task(1)
    b = v.add_instance("m4.large", tasks=[(late, 5000.0, 3600.0)])
    assert v.remaining(late) == 5000.0  # overdue: as long again as it has run (§3.4)
    assert v.instances_remaining([a, b]) == [3000.0, 5000.0]
    assert a.free == (2000, 8192) and v.location(t) is a
    assert v.migration_seconds(t) > 0


def test_first_fit_places_a_pending_task_on_the_free_instance():
    v = StaticView()
    a = v.add_instance("m4.xlarge", tasks=[(task(0, cpu=2, mem=8), 600.0, 3600.0)])
    p = v.add_pending(task(1, cpu=1, mem=4))
    d = v.decide(make_scheduler("first-fit"))
    assert [(x.task, x.instance) for x in d.placements] == [(p, a)]
    assert not d.acquisitions


def test_stratus_acquires_for_what_fits_nowhere():
    v = StaticView()
    v.add_instance("m4.large", tasks=[(task(0, cpu=2, mem=8), 0.0, 3600.0)])  # full
    ps = [v.add_pending(task(i, cpu=4, mem=16), estimate=7200.0) for i in range(1, 5)]
    d = v.decide(make_scheduler("stratus"))
    assert not d.placements
    got = [t for a in d.acquisitions for t in a.tasks]
    assert sorted(t.tid for t in got) == [p.tid for p in ps]


def test_a_policy_that_changes_an_instance_is_stopped_here_too():
    class Bad:
        name = "bad"

        def schedule(self, view):
            for inst in view.instances:
                inst.keep = True

    v = StaticView()
    v.add_instance("m4.large")
    with pytest.raises(DecisionError, match=r"Instance\.keep"):
        v.decide(Bad())


def test_a_task_that_does_not_fit_is_refused():
    v = StaticView()
    with pytest.raises(ValueError, match="does not fit"):
        v.add_instance("m4.large", tasks=[(task(0, cpu=4, mem=8), 0.0, 60.0)])
