"""Output files and directories the CLI writes: checked before any work, written under a
temporary name and renamed into place, never over an input, never over an existing output
without ``--force``. An interrupt or failure leaves the output as it was (docs/decisions.md).
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterable
from contextlib import contextmanager, suppress
from pathlib import Path

from stratus.base import tempnames
from stratus.base.errors import ConfigError

# what `replay --save DIR` writes: a directory holding only these may be replaced (--force)
SAVED_FILES = ("instances.parquet", "jobs.parquet")


def input_paths(*specs: str | None) -> list[Path]:
    """The files and directories among trace/price specs (not synthetic ones)."""
    return [Path(s) for s in specs if s and not str(s).startswith("synthetic:")]


def _resolved(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare as written
        return p.absolute()


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _check_not_input(out: Path, option: str, inputs: Iterable[Path]) -> None:
    ro = _resolved(out)
    for src in inputs:
        rs = _resolved(src)
        same = ro == rs
        if not same and out.exists() and src.exists():
            with suppress(OSError):
                same = os.path.samefile(out, src)
        how = ("is the input" if same or ro == rs else
               "lies inside the input directory" if _inside(ro, rs) else
               "contains the input" if _inside(rs, ro) else None)
        if how:
            raise ConfigError(f"{option} {out}: {how} {src}; an output never replaces or "
                              "goes into an input")


def refuse_inputs(out: Path, what: str, inputs: Iterable[Path]) -> None:
    """ConfigError if ``out`` is, lies in or holds one of ``inputs``."""
    _check_not_input(Path(out), what, inputs)


def _temporary(out: Path, tag: str = "tmp") -> Path:
    return tempnames.fresh(out, tag)


def _probe_parent(out: Path, option: str) -> None:
    parent = out.parent
    if not parent.is_dir():
        raise ConfigError(f"{option} {out}: no such directory {parent}")
    probe = _temporary(out, "probe")
    try:  # os.access says yes to root on read-only places such as /proc: try for real
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"{option} {out}: cannot write in {parent}: "
                          f"{exc.strerror or exc}") from None


def check_file(path: str, option: str, inputs: Iterable[Path], force: bool) -> Path:
    """A file output, checked before any work."""
    out = Path(path)
    if not out.name or out.is_dir():
        raise ConfigError(f"{option} {out}: is a directory; give a file name")
    _check_not_input(out, option, inputs)
    if (out.exists() or out.is_symlink()) and not force:
        raise ConfigError(f"{option} {out}: already exists; pass --force to replace it")
    _probe_parent(out, option)
    return out


#: the formats a ``--plot`` may be written in, by file extension (matplotlib writes each
#: without extra packages)
PLOT_FORMATS = ("png", "svg", "pdf")


def check_plot(path: str, option: str, inputs: Iterable[Path], force: bool) -> tuple[Path, str]:
    """A plot output, checked before any work: a file (as ``check_file``) whose extension
    names a format in PLOT_FORMATS. Returns the path and the format."""
    out = check_file(path, option, inputs, force)  # an input or a directory is said first
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in PLOT_FORMATS:
        what = f"extension {out.suffix!r}" if fmt else "no extension"
        raise ConfigError(f"{option} {path}: {what} is not a plot format; end the name in "
                          f"{', '.join('.' + f for f in PLOT_FORMATS)}")
    return out, fmt


def check_dir(path: str, option: str, inputs: Iterable[Path], force: bool,
              owned: Callable[[str], bool] = lambda name: name in SAVED_FILES) -> Path:
    """A directory output (``--save``, a report), checked before any work: new, empty, or
    (with ``--force``) holding only files that ``owned`` says the command writes."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{option} {out}: exists and is not a directory")
    _check_not_input(out, option, inputs)
    if out.is_dir():
        try:
            have = sorted(p.name for p in out.iterdir())
        except OSError as exc:
            raise ConfigError(f"{option} {out}: cannot list: {exc.strerror or exc}") from None
        other = [n for n in have if not owned(n)]
        if other:
            raise ConfigError(f"{option} {out}: holds other files ({', '.join(other[:3])}"
                              f"{', ...' if len(other) > 3 else ''}); give a new or empty "
                              "directory")
        if have and not force:
            raise ConfigError(f"{option} {out}: already holds earlier output; pass --force "
                              "to replace it")
    _probe_parent(out, option)
    return out


@contextmanager
def _no_interrupt():
    """Hold SIGINT/SIGTERM over a few renames, so they commit as a unit."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    except (AttributeError, ValueError, OSError):  # no signal masks here: best effort
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_file(out: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``out``; ``tmp`` never outlives a failure."""
    tmp = _temporary(out)
    try:
        write(tmp)
        os.replace(tmp, out)
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_dir(out: Path, files: dict[str, Callable[[Path], None]],
              owned: Callable[[str], bool] = lambda name: name in SAVED_FILES) -> None:
    """Every file written into a temporary directory next to ``out``, which then takes
    ``out``'s place (an empty ``out`` is replaced by one rename; one holding an earlier
    save is moved aside first and removed after, with interrupts held): the directory
    holds the old save or the new one, never a mix. ``out`` is checked again just before:
    a file that appeared in it during the run (not one ``owned`` says the command writes)
    stops the write rather than be removed with the earlier save."""
    tmp = _temporary(out)
    old = _temporary(out, "old")
    made = False
    try:
        tmp.mkdir()
        made = True
        for name, write in files.items():
            write(tmp / name)
        with _no_interrupt():
            if out.is_dir() and any(out.iterdir()):
                other = sorted(n for n in os.listdir(out) if not owned(n))
                if other:
                    raise ConfigError(f"{out}: now holds other files ({', '.join(other[:3])}"
                                      "), not only earlier output; nothing was replaced")
                os.rename(out, old)
            os.replace(tmp, out)  # rename(2) replaces an empty directory
    except OSError as exc:
        if old.exists() and not out.exists():
            os.rename(old, out)  # put the earlier save back
        raise ConfigError(f"{out}: cannot write: {exc.strerror or exc}") from None
    finally:
        if made:  # only what this call created: the temporary names are fresh
            shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
