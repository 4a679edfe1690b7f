"""The live loop's time: seconds since an epoch (a UTC datetime), with the wake-ups between
two ticks. ``WallClock`` is real time; ``ManualClock`` is moved by a test harness, which
wakes the loop at the times things happen in its simulated world."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    epoch: datetime

    @property
    def now(self) -> float: ...

    def wakeups(self, until: float) -> Iterator[float]:
        """The times to look at the world before ``until``; ``now`` is ``until`` after."""
        ...


def seconds(clock: Clock, when: datetime) -> float:
    """``when`` on the clock's scale."""
    return (when - clock.epoch).total_seconds()


def moment(clock: Clock, t: float) -> datetime:
    return clock.epoch + timedelta(seconds=t)


class WallClock:
    """Real time, from ``epoch`` (default: the Unix epoch, so ticks fall on whole multiples
    of the tick in UTC). Between ticks the loop looks every ``poll_s`` seconds."""

    def __init__(self, poll_s: float = 5.0, epoch: datetime | None = None) -> None:
        self.epoch = epoch or datetime(1970, 1, 1, tzinfo=UTC)
        self.poll_s = poll_s
        self._offset = (datetime(1970, 1, 1, tzinfo=UTC) - self.epoch).total_seconds()

    @property
    def now(self) -> float:
        return time.time() + self._offset

    def wakeups(self, until: float) -> Iterator[float]:
        while True:
            left = until - self.now
            if left <= 0:
                return
            time.sleep(min(left, self.poll_s))
            if self.now < until:
                yield self.now


class ManualClock:
    """Time moved by hand. ``world``, when given, has ``settle(t)`` (react now to what the
    loop just did), ``next_event(t)`` (the time of its next change after ``t``, or inf)
    and ``fire(t)`` (make the changes of time ``t``): the loop wakes at each of them."""

    def __init__(self, epoch: datetime | None = None, start: float = 0.0, world=None) -> None:
        self.epoch = epoch or datetime(2026, 1, 1, tzinfo=UTC)
        self._now = start
        self.world = world

    @property
    def now(self) -> float:
        return self._now

    def wakeups(self, until: float) -> Iterator[float]:
        w = self.world
        if w is None:
            self._now = max(self._now, until)
            return
        while True:
            w.settle(self._now)
            e = w.next_event(self._now)
            if e >= until:
                break
            self._now = e
            w.fire(e)
            yield e
        self._now = until
        w.fire(until)


__all__ = ["Clock", "ManualClock", "WallClock", "moment", "seconds"]
