"""Cell claims: sweeps that share a results directory share its cells instead of each
running all of them. A sweep claims a cell just before it runs it, by creating
``claims/KEY`` exclusively (O_EXCL); another sweep skips a claimed cell and, once it has
nothing else to do, waits for that cell's row, or runs the cell itself if the claim was
abandoned.

A claim names its host and process (pid and start time). It is abandoned when that process
is gone (same host; a claim naming a live process that started at another time, or no
process at all, is abandoned too), or, from another host, when it has not been refreshed
for ``STALE_S`` (its sweep refreshes its claims every ``REFRESH_S``). Two sweeps that find one abandoned claim at the same
instant may both run the cell: its two rows are identical (a cell is deterministic), and
the rename keeps one."""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import suppress
from pathlib import Path

from stratus.app import sweep_store as store

CLAIMS = "claims"
REFRESH_S, STALE_S = 60.0, 600.0


class Claims:
    """This sweep's claims in ``results``; ``close()`` releases those it still holds."""

    def __init__(self, results: Path) -> None:
        self.dir = results / CLAIMS
        self.dir.mkdir(exist_ok=True)
        self.mine: set[str] = set()
        self._me = {"host": store.host(), "pid": os.getpid(),
                    "start": store.process_start(os.getpid())}
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._refresh, daemon=True,
                                      name="stratus-claims-refresh")
        self._beat.start()

    def take(self, key: str) -> bool:
        """Claim ``key``'s cell; False if a live sweep holds it. The claim appears whole
        (a hard link to a written file), so no sweep ever reads half of one."""
        path = self.dir / key
        tmp = store.temporary(path)
        tmp.write_text(json.dumps({**self._me, "since": time.time()}))
        try:
            for _ in range(3):
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    held = self._read(path)
                    if held is not None and self.alive(path, held):
                        return False
                    if held is not None and self._read(path) == held:
                        path.unlink(missing_ok=True)  # abandoned: take it over
                    continue
                self.mine.add(key)
                return True
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def held_elsewhere(self, key: str) -> bool:
        """Whether a live sweep other than this one holds ``key``'s cell."""
        path = self.dir / key
        held = self._read(path)
        return held is not None and held.get("pid", -1) != os.getpid() and self.alive(path, held)

    def release(self, key: str) -> None:
        if key in self.mine:
            self.mine.discard(key)
            (self.dir / key).unlink(missing_ok=True)

    def close(self) -> None:
        self._stop.set()
        for key in list(self.mine):
            self.release(key)

    @staticmethod
    def alive(path: Path, held: dict) -> bool:
        if held.get("host") == store.host():
            pid = held.get("pid")
            if not isinstance(pid, int) or pid <= 0 or not store.pid_alive(pid):
                return False
            now = store.process_start(pid)  # the same process, not a reuse of its pid
            return now is None or held.get("start") == now
        try:
            return time.time() - path.stat().st_mtime < STALE_S
        except FileNotFoundError:
            return False

    @staticmethod
    def _read(path: Path) -> dict | None:
        """The claim's content (``{}`` if it is not a claim's); None if there is none."""
        try:
            held = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, UnicodeDecodeError, OSError):
            return {}
        return held if isinstance(held, dict) else {}

    def _refresh(self) -> None:
        while not self._stop.wait(REFRESH_S):
            for key in list(self.mine):
                with suppress(FileNotFoundError):
                    os.utime(self.dir / key)
