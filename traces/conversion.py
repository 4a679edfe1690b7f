"""``convert_trace``, what ``stratus traces convert`` runs: any trace spec (a file, the
Google 2011 directory or ``synthetic:NAME?...``) to the canonical table, in the format the
output's name says (``.parquet``/``.pq``: canonical Parquet; ``.csv``/``.csv.gz``: the same
columns as CSV; any other name is refused before any work), never over an existing file
unless asked, and never leaving a partial file at the output path."""

from __future__ import annotations

import os
from pathlib import Path

from stratus.base import tempnames
from stratus.base.errors import ConfigError, TraceError
from stratus.traces.loaders import convert_file
from stratus.traces.schema import LoadReport
from stratus.traces.spec import SYNTHETIC, TraceSource, guess_format

#: what ``convert`` writes, by how the output's name ends (longest first)
OUTPUT_KINDS = ((".csv.gz", "csv.gz"), (".parquet", "parquet"), (".pq", "parquet"),
                (".csv", "csv"))


def output_kind(out: Path) -> str:
    """parquet, csv or csv.gz, from the output's name; ConfigError for any other name."""
    name = Path(out).name.lower()
    for suffix, kind in OUTPUT_KINDS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return kind
    ext = Path(out).suffix
    what = f"the extension {ext!r} names no format" if ext else "no extension names a format"
    raise ConfigError(f"{out}: {what}; end the name in .parquet (canonical Parquet) or "
                      ".csv / .csv.gz (its columns as CSV)")


def convert_trace(spec: str, fmt: str | None, out: Path,
                  force: bool = False) -> tuple[LoadReport, int]:
    """Write trace ``spec`` at ``out`` in the format its name says; see the module doc.
    Returns the loader's report and the number of tasks written.

    A synthetic spec carries its own parameters (``synthetic:google?hours=2&seed=3``) and
    takes no format. ``out`` must not exist unless ``force``; the output is written under a
    temporary name in the same directory and renamed into place, so a failed or interrupted
    conversion leaves ``out`` as it was.
    """
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"{out}: is a directory; give the output .parquet or .csv file")
    kind = output_kind(out)
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
    tmp = tempnames.fresh(out.with_name(out.name + ".parquet"))
    text = tempnames.fresh(out)
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
        rows = _parquet_rows(tmp)
        if kind == "parquet":
            os.replace(tmp, out)
        else:
            write_csv(tmp, text, compressed=kind == "csv.gz")
            os.replace(text, out)
    except OSError as exc:  # loaders turn read failures into TraceError: this is the write
        raise TraceError(f"{out}: cannot write the output: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
        text.unlink(missing_ok=True)
    return report, rows


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def write_csv(parquet: Path, out: Path, compressed: bool = False) -> None:
    """The canonical Parquet ``parquet`` as CSV at ``out`` (a header of the canonical
    column names), a row group at a time, so a big trace needs no more memory than
    Parquet's own reading does; booleans as true/false."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    src = pq.ParquetFile(parquet)
    sink = pa.CompressedOutputStream(str(out), "gzip") if compressed else pa.OSFile(str(out), "wb")
    with sink, pacsv.CSVWriter(sink, src.schema_arrow.remove_metadata()) as writer:
        for i in range(src.num_row_groups):
            writer.write_table(src.read_row_group(i).replace_schema_metadata(None))

