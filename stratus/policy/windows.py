"""A sliding window of the last ``size`` numbers, kept in arrival order and sorted.

The sorted copy makes the median a lookup instead of a sort per call. Equal values keep
their arrival order in it (``insort`` puts a newcomer right of its equals, eviction takes
the leftmost equal, i.e. the oldest), so it is exactly ``sorted(window)`` and ``median()``
is bit-identical to ``statistics.median(window)``.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque


class Window:
    __slots__ = ("size", "values", "ordered")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"window size must be positive, got {size}")
        self.size = size
        self.values: deque[float] = deque()
        self.ordered: list[float] = []

    def append(self, x: float) -> None:
        if len(self.values) == self.size:
            ordered = self.ordered
            del ordered[bisect_left(ordered, self.values.popleft())]
        self.values.append(x)
        insort(self.ordered, x)

    def median(self) -> float:
        """As ``statistics.median``: the middle value, or the mean of the two middle ones."""
        s = self.ordered
        n = len(s)
        if n % 2:
            return s[n // 2]
        if not n:
            raise ValueError("median of an empty window")
        i = n // 2
        return (s[i - 1] + s[i]) / 2

    def mean(self) -> float:
        # summed in arrival order, as sum(window) would: a running total would round
        # differently
        return sum(self.values) / len(self.values)

    def recent(self) -> float:
        return self.values[-1]

    def __deepcopy__(self, memo: dict) -> Window:
        """Numbers only: new containers, the same floats. An online estimator holds
        thousands of windows and is copied for every replay (stratus.sim.engine); the generic
        deepcopy of a slotted object is several times slower."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.size = self.size
        new.values = self.values.copy()
        new.ordered = self.ordered.copy()
        return new

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.values)
