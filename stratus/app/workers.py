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


def unguarded_main() -> tuple[str, int] | None:
    """(file, line) of the main script's top-level statement this call runs under, when it
    is outside an ``if __name__ ...:`` block: a spawned worker starts by importing the main
    script, so it would run that statement again and die starting workers of its own (the
    parent then saw only "a worker process died"). None: no script (a notebook, ``python
    -c``, the REPL, a package's ``__main__``, which spawn does not re-run), a guarded call,
    or a source that cannot be read."""
    import ast
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    # what a spawned child re-runs (multiprocessing.spawn): the main module by its name,
    # unless it is a package's __main__ (``python -m stratus.app.cli``), else by its path
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if not path or (name or "").split(".")[-1] == "__main__":
        return None
    f = sys._getframe(1)
    while f is not None and not (f.f_globals is vars(main) and f.f_code.co_name == "<module>"):
        f = f.f_back
    if f is None or os.path.abspath(f.f_code.co_filename) != os.path.abspath(path):
        return None
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    line = f.f_lineno
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node.lineno <= line <= node.end_lineno and any(
                isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(node.test)):
            return None
    return path, line


def refuse_unguarded_main() -> None:
    """A ConfigError (one line) instead of workers that would each rerun the script."""
    from stratus.base.errors import ConfigError

    where = unguarded_main()
    if where is not None:
        raise ConfigError(f"{where[0]}, line {where[1]}: worker processes start by importing "
                          f"this script and would run it again: put its calls under "
                          f"`if __name__ == \"__main__\":`, or run in one process (the "
                          f"API's default; jobs=1, workers=1)")


class Pool:
    """A ``ProcessPoolExecutor`` of ``jobs`` quiet workers, each running ``init(*args)``
    first; ``args`` travel through a temporary file removed when the pool closes. Use as a
    context manager; an exception (a Ctrl-C) stops the workers at once rather than after
    their current cell. Refused (``refuse_unguarded_main``) when started from a script's
    unguarded top level."""

    def __init__(self, jobs: int, init=None, args: tuple = ()) -> None:
        refuse_unguarded_main()
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
