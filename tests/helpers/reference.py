"""The reference paths the parts' fast paths are compared with (issue 37 item 4: test
scaffolding lives here, not in the parts).

Each 2-D fast path (an index, a tree) has a general path in its part, which the part takes
for requests of any other size (a GPU catalog); ``general_paths`` makes the parts take it
on (cpu, mem) requests too, so a test can check that both decide alike. First fit's
general path is a plain scan (``scan_first_fit``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from stratus.packers.binpack import Binpack
from stratus.packers.dot_product import DotIndex
from stratus.packers.first_fit import FirstFit
from stratus.policy.compose import Plan, first_fit
from stratus.scalers.karpenter import KarpenterProvisioner
from stratus.scalers.per_task import PerTaskScaler
from stratus.sim.model import Task


def scan_first_fit(view, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
    """First fit by a scan of the view's live instances, none cordoned: what ``FirstFit``'s
    index must answer."""
    cordoned = plan.cordoned
    return first_fit(plan, (i for i in view.instances if i.iid not in cordoned), tasks)


def _first_fit_pack(self, view, plan, tasks):
    return scan_first_fit(view, plan, tasks) if tasks else []


def _dot_choose(self, req, rem=0.0, ready_only=False, exclude=-1, avoid=(), job=None):
    return self._choose_scan(req, ready_only, exclude, avoid)


def _binpack_pack(self, view, plan, tasks):
    return self._scan(view, plan, tasks) if tasks else []


def _copack(self, view, plan, tasks, offer):
    self._copack_scan(plan, tasks, offer)


@contextmanager
def general_paths() -> Iterator[None]:
    """Within: every part takes its general path, whatever the request's size."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FirstFit, "pack", _first_fit_pack)
        mp.setattr(DotIndex, "choose", _dot_choose)
        mp.setattr(Binpack, "pack", _binpack_pack)
        mp.setattr(KarpenterProvisioner, "_ffd", staticmethod(KarpenterProvisioner._ffd_scan))
        mp.setattr(PerTaskScaler, "_copack_index", _copack)
        yield
