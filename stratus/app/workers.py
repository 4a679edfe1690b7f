"""Worker processes for parallel replays (``compare --jobs``, ``sweep --workers``): spawned,
deaf to Ctrl-C from birth (the parent alone handles it and stops them), and gone soon after
their parent is, even when it was killed with SIGKILL (docs/decisions.md, "Interrupts and
worker processes").

What a worker needs that is large (a trace of a million tasks) goes through a temporary
file, not the spawn pipe: writing it into the pipe took the parent 1-2 s per worker, during
which a Ctrl-C either waited or tore the pickle and left the worker printing a traceback."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import signal
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import popen_spawn_posix

#: how often a worker checks that its parent is alive (seconds)
ORPHAN_POLL_S = 0.5


@contextlib.contextmanager
def quiet_launch():
    """Processes started inside start with SIGINT ignored: Ctrl-C reaches the whole process
    group, and a worker still importing would print a KeyboardInterrupt traceback. The
    disposition is inherited across exec, and Python keeps an ignored SIGINT ignored.
    Only for the launch itself (a fork, an exec and a few bytes into a pipe: milliseconds):
    a Ctrl-C inside that window is lost. Holding it instead (blocking SIGINT) does not
    work: the C libraries' own threads (Arrow's, jemalloc's) would take it, ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and only it gets KeyboardInterrupt)
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


class _QuietProcess(mp.get_context("spawn").Process):
    """A spawned process born deaf to Ctrl-C (``quiet_launch``)."""

    @staticmethod
    def _Popen(process_obj):
        with quiet_launch():
            return popen_spawn_posix.Popen(process_obj)


class _QuietContext(type(mp.get_context("spawn"))):
    Process = _QuietProcess


def _watch_parent(parent: int, payload: str | None) -> None:
    while True:
        time.sleep(ORPHAN_POLL_S)
        if os.getppid() != parent:  # re-parented: the parent is gone, nobody reads our result
            if payload:
                with contextlib.suppress(OSError):
                    os.unlink(payload)
            os._exit(1)


def _child_start(parent: int, init, payload: str | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # already so; also if started otherwise
    threading.Thread(target=_watch_parent, args=(parent, payload), daemon=True,
                     name="stratus-orphan-watch").start()
    if init is not None:
        args = ()
        if payload:
            with open(payload, "rb") as fh:
                args = pickle.load(fh)
        init(*args)


class Pool:
    """A ``ProcessPoolExecutor`` of ``jobs`` quiet workers, each running ``init(*args)``
    first; ``args`` travel through a temporary file removed when the pool closes. Use as a
    context manager; an exception (a Ctrl-C) stops the workers at once rather than after
    their current cell."""

    def __init__(self, jobs: int, init=None, args: tuple = ()) -> None:
        self._payload = None
        if init is not None and args:
            fd, self._payload = tempfile.mkstemp(prefix="stratus-workers-", suffix=".pickle")
            try:
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(args, fh, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:
                self._remove_payload()
                raise
        self.executor = ProcessPoolExecutor(
            max_workers=jobs, mp_context=_QuietContext(),
            initializer=_child_start, initargs=(os.getpid(), init, self._payload))

    def _remove_payload(self) -> None:
        if self._payload:
            with contextlib.suppress(OSError):
                os.unlink(self._payload)
            self._payload = None

    def __enter__(self) -> ProcessPoolExecutor:
        return self.executor

    def __exit__(self, kind, exc, tb) -> None:
        try:
            if kind is not None:
                stop(self.executor)
            self.executor.shutdown(wait=True, cancel_futures=True)
        finally:
            self._remove_payload()


def stop(ex: ProcessPoolExecutor) -> None:
    """Stop the workers now rather than after their current replay (minutes on a big day).
    Python < 3.14 has no public way; ``_processes`` has been there since 3.2."""
    terminate = getattr(ex, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.terminate()
