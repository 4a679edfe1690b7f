"""What a released instance leaves for the result: one row of compact columns.

Task-per-instance releases one instance per task, so keeping every Instance object to the
end cost ~0.4 kB an instance (about 0.4 GB at a million tasks); a row here costs ~90 bytes.
Rows are in release order, the order the totals are added up in.
"""

from __future__ import annotations

import math
from array import array

from stratus.sim.model import Instance


class Ledger:
    """Released instances as columns (the objects themselves are not kept)."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.iid = array("q")
        self.hosted = array("q")
        self.requested = array("d")
        self.ready = array("d")  # NaN: released before it came up
        self.released = array("d")
        self.cost = array("d")
        self.used = array("d")  # allocated resource-time, dims numbers a row
        self.type_code = array("q")
        self.market_code = array("q")
        self.types: list = []  # InstanceType by code, first seen first
        self.markets: list[str] = []
        self._type_codes: dict[str, int] = {}
        self._market_codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.iid)

    def add(self, inst: Instance) -> None:
        self.iid.append(inst.iid)
        self.hosted.append(inst.hosted)
        self.requested.append(inst.requested_at)
        self.ready.append(math.nan if inst.ready_at is None else inst.ready_at)
        self.released.append(inst.released_at)
        self.cost.append(inst.cost)
        self.used.extend(inst.used_integral)
        name = inst.itype.name
        code = self._type_codes.get(name)
        if code is None:
            code = self._type_codes[name] = len(self.types)
            self.types.append(inst.itype)
        self.type_code.append(code)
        code = self._market_codes.get(inst.market)
        if code is None:
            code = self._market_codes[inst.market] = len(self.markets)
            self.markets.append(inst.market)
        self.market_code.append(code)
