"""``sweep --executor dask-local``: a Dask ``LocalCluster`` in a process of its own, in a
session of its own, so that Ctrl-C at the terminal reaches the sweep alone, which then
stops the cluster at once (its workers, spawned by Dask's nannies, would otherwise each
print a KeyboardInterrupt traceback). The cluster process lives while its standard input
is open: when the sweep ends, or dies even by SIGKILL, the pipe closes and so does the
cluster (Dask's workers exit with their nanny's process).

Run as ``python -m stratus.app.dask_local WORKERS``: prints the scheduler's address on one
line, then waits for end of input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager, suppress

from stratus.base.errors import StratusError

#: seconds the cluster gets to start (imports, a scheduler and its workers), then to close
START_S, CLOSE_S = 120.0, 10.0


@contextmanager
def cluster(workers: int):
    """The address of a fresh local cluster of ``workers`` single-threaded processes, for
    the duration of the block; an exception (a Ctrl-C) kills the cluster's whole session."""
    import selectors

    proc = subprocess.Popen([sys.executable, "-m", "stratus.app.dask_local", str(workers)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    ok = False
    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        address = proc.stdout.readline().strip() if sel.select(START_S) else ""
        sel.close()
        if not address.startswith("tcp://"):
            raise StratusError(f"--executor dask-local: the local Dask cluster did not start "
                               f"(exit status {proc.poll()})")
        yield address
        ok = True
    finally:
        _close(proc, graceful=ok)


def _close(proc: subprocess.Popen, graceful: bool) -> None:
    if graceful:
        try:
            proc.stdin.close()  # end of input: the cluster closes itself
            proc.wait(CLOSE_S)
            return
        except (OSError, subprocess.TimeoutExpired):
            pass
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the cluster process and its workers
    proc.wait()


def main(argv: list[str]) -> int:
    from dask.distributed import LocalCluster

    workers = int(argv[0])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a session of its own: only ever sent
    lc = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=40)
    try:
        print(lc.scheduler_address, flush=True)
        sys.stdin.read()  # until the sweep closes the pipe or dies
    finally:
        lc.close(timeout=CLOSE_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
