"""``stratus sweep`` and ``stratus report``: a grid of runs from a TOML config, and the
papers' figures from its results."""

from __future__ import annotations

import sys

from stratus.app import api
from stratus.app.cli.common import add_output_flags, print_doc


def add_parsers(sub) -> None:
    p = sub.add_parser("sweep", help="a grid of replays or waiting simulations from a TOML "
                                     "config, one Parquet row per cell, resumable")
    p.add_argument("config", metavar="CONFIG.toml", help="the sweep (see examples/)")
    p.add_argument("--results", metavar="DIR", help="results directory (default: the "
                                                    "config's results)")
    p.add_argument("--executor", default="local", metavar="local|dask-local|dask://HOST:PORT",
                   help="processes on this machine (default), a Dask LocalCluster, or a "
                        "running Dask scheduler")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: one per core)")
    p.add_argument("--cache-dir", metavar="DIR", default=None,
                   help="cache of loaded raw-format traces, shared by the workers (default: "
                        "$STRATUS_CACHE_DIR, else $XDG_CACHE_HOME/stratus, else "
                        "~/.cache/stratus)")
    p.add_argument("--no-cache", action="store_true",
                   help="load traces from their raw files; read and write no cache")
    add_output_flags(p, progress=True, progress_help="no progress on stderr (a bar on a "
                     "terminal, else a line as cells finish, at most one every 5 s)")
    p = sub.add_parser("report", help="the papers' figures from a sweep's results, as one "
                                      "HTML page with PNGs")
    p.add_argument("results", metavar="RESULTS_DIR", help="a sweep's results directory")
    p.add_argument("-o", "--output", required=True, metavar="OUT_DIR",
                   help="directory for index.html and its figures (new or empty)")
    p.add_argument("--force", action="store_true", help="replace an earlier report in OUT_DIR")
    add_output_flags(p)


def cmd_sweep(args) -> int:
    """Exit 0 when every cell has a result, 1 when some failed (their rows say why; a
    rerun retries them), 2 on a bad config or option."""
    workers = args.workers
    if workers is None and args.executor == "local":
        # the CLI's default is one worker per core (--help); the API's is one process
        # (it cannot know that its caller's main module is guarded)
        from stratus.app.runs import default_jobs

        workers = default_jobs()
    out = api.sweep(args.config, args.results, args.executor, workers,
                    progress=not args.no_progress, cache_dir=args.cache_dir,
                    no_cache=args.no_cache)
    print_doc(out, args.json, lambda: (
        f"{out['cells_total']} cells: {out['cells_run']} run, {out['cells_skipped']} "
        f"already done, {out['cells_failed']} failed; results in {out['results_dir']}"))
    return 1 if out["cells_failed"] else 0


def cmd_report(args) -> int:
    from stratus.app.report_html import report_text

    doc = api.report(args.results, args.output, args.force)
    print_doc(doc, args.json, lambda: report_text(doc))
    if not args.json:
        print(f"wrote {doc['report']} and {len(doc['figures'])} figures", file=sys.stderr)
    return 0


COMMANDS = {"sweep": cmd_sweep, "report": cmd_report}
