"""``convert_trace``, what ``stratus traces convert`` runs: any trace spec (a file, the
Google 2011 directory or ``synthetic:NAME?...``) to canonical Parquet, never over an existing
file unless asked, and never leaving a partial file at the output path."""

from __future__ import annotations

import os
from pathlib import Path

from stratus.base import tempnames
from stratus.base.errors import ConfigError, TraceError
from stratus.traces.loaders import convert_file
from stratus.traces.schema import LoadReport
from stratus.traces.spec import SYNTHETIC, TraceSource, guess_format


def convert_trace(spec: str, fmt: str | None, out: Path, force: bool = False) -> LoadReport:
    """Write trace ``spec`` as canonical Parquet at ``out``; see the module doc.

    A synthetic spec carries its own parameters (``synthetic:google?hours=2&seed=3``) and
    takes no format. ``out`` must not exist unless ``force``; the output is written under a
    temporary name in the same directory and renamed into place, so a failed or interrupted
    conversion leaves ``out`` as it was.
    """
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"{out}: is a directory; give the output .parquet file")
    if (out.exists() or out.is_symlink()) and not force:
        raise ConfigError(f"{out}: already exists; pass --force to replace it")
    if not out.parent.is_dir():
        raise ConfigError(f"{out.parent}: no such directory for the output")
    if not os.access(out.parent, os.W_OK):  # fail now, not after a long conversion
        raise ConfigError(f"{out.parent}: cannot write there")
    synthetic = spec.startswith(SYNTHETIC)
    if synthetic and fmt:
        raise ConfigError(f"{spec}: a synthetic spec takes no --format (its parameters go "
                          "after '?')")
    tmp = tempnames.fresh(out)
    try:
        if synthetic:
            trace = TraceSource(spec).full()
            trace.to_parquet(tmp)
            report = LoadReport(spec, len(trace))
        else:
            path = Path(spec)
            if not path.exists():
                raise TraceError(f"{path}: no such file or directory")
            report = convert_file(path, fmt or guess_format(path), tmp)
        os.replace(tmp, out)
    except OSError as exc:  # loaders turn read failures into TraceError: this is the write
        raise TraceError(f"{out}: cannot write the output: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return report
