"""Reserved instances inside the engine (issue 23, item 1): capacity paid for up front.

``--reserved TYPE:COUNT[,TYPE:COUNT...]`` gives a replay COUNT instances of each TYPE in
the "reserved" market, ready from the window's first scheduling tick to the replay's end.
They are never released before the end (not when idle, not by a policy), and the bill
holds each for that whole horizon at its reserved rate, used or not. The rate, as the
waiting-policy commands price a reserved server (paper 000 §5, ``stratus.waiting.bill``):
with ``--reserved-discount D``, (1 - D) x on-demand; without, the catalog's
``reserved_hourly`` where it has one, else (1 - 0.6) x on-demand (the papers' discount).
They are not revoked, do not crash and are never refused for insufficient capacity
(docs/decisions.md, "Reserved instances").
"""

from __future__ import annotations

import math

from stratus.base.errors import ConfigError

DEFAULT_DISCOUNT = 0.6  # reserved = 0.4 x on-demand where the catalog has no rate (000 §5)
MAX_COUNT = 100_000  # per type: a typo such as m4.large:1000000000 fails, not the memory


def parse_reserved(text: str | None, what: str = "--reserved") -> tuple[tuple[str, int], ...]:
    """``TYPE:COUNT[,TYPE:COUNT...]`` to ((type, count), ...), in the order given; None or
    "" (the default): none. Every mistake is one ConfigError naming ``what`` and the part.
    Types are checked against a catalog by ``check_reserved``."""
    if text is None:
        return ()
    if not isinstance(text, str):
        raise ConfigError(f"{what} takes TYPE:COUNT[,TYPE:COUNT...], got {text!r}")
    text = text.strip()
    if not text:
        return ()
    out: list[tuple[str, int]] = []
    for part in text.split(","):
        part = part.strip()
        name, sep, count = part.rpartition(":")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"{what}: {part!r} is not TYPE:COUNT (e.g. m4.10xlarge:2)")
        try:
            n = int(count.strip())
        except ValueError:
            raise ConfigError(f"{what}: {part!r}: the count must be a whole number >= 1, "
                              f"got {count.strip()!r}") from None
        out.append((name, n))
    _check_pairs(out, what)
    return tuple(out)


def _check_pairs(reserved, what: str) -> None:
    """Counts from 1 to MAX_COUNT, no type twice (with or without a catalog)."""
    seen: set[str] = set()
    for name, n in reserved:
        if not 1 <= n <= MAX_COUNT:
            raise ConfigError(f"{what}: '{name}:{n}': the count must be from 1 to "
                              f"{MAX_COUNT:,}, got {n}")
        if name in seen:
            raise ConfigError(f"{what}: type {name!r} given twice")
        seen.add(name)


def reserved_text(reserved: tuple[tuple[str, int], ...]) -> str:
    """The canonical ``TYPE:COUNT,...`` form of a parsed value ("" for none)."""
    return ",".join(f"{name}:{n}" for name, n in reserved)


def check_reserved(reserved, catalog, what: str = "--reserved") -> None:
    """``reserved`` is a tuple of (type name, count >= 1) pairs naming ``catalog``'s types."""
    if not isinstance(reserved, tuple):
        raise ConfigError(f"{what} takes a tuple of (type, count) pairs "
                          f"(stratus.commitments.reserved.parse_reserved reads TYPE:COUNT,...), got "
                          f"{reserved!r}")
    for pair in reserved:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], int) and not isinstance(pair[1], bool)):
            raise ConfigError(f"{what}: {pair!r} is not a (type, count) pair")
        if pair[0] not in catalog:
            known = ", ".join(t.name for t in catalog)
            raise ConfigError(f"{what}: unknown instance type {pair[0]!r} in catalog "
                              f"{catalog.name!r} (known: {known})")
    _check_pairs(reserved, what)


def check_discount(d, what: str = "--reserved-discount") -> float | None:
    """None (the catalog's rates), or a fraction in [0, 1)."""
    if d is None:
        return None
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not (
            math.isfinite(d) and 0.0 <= d < 1.0):
        raise ConfigError(f"{what} takes a fraction in [0, 1), got {d!r}")
    return float(d)


def ran_where(ran_on) -> dict:
    """What ran where, from a replay's per-task record of the instances its runs started
    on (bit 1: a reserved instance, bit 2: a rented one, spot or on-demand): the tasks
    that ran only on reserved instances, only on rented ones, on both (moved or
    restarted across), and the share of the tasks that ran that used a rented instance
    for all or part of their run. A task that never started counts in none."""
    counts = bytes(ran_on).count
    reserved, cloud, both = counts(1), counts(2), counts(3)
    ran = reserved + cloud + both
    return {"tasks_ran_on_reserved": reserved, "tasks_ran_on_cloud": cloud,
            "tasks_ran_on_both": both,
            "ran_on_cloud_fraction": round((cloud + both) / ran, 6) if ran else 0.0}


def reserved_rate(itype, discount: float | None) -> float:
    """$/h of a reserved instance of ``itype``: (1 - discount) x on-demand; with no
    discount, the catalog's reserved rate, else (1 - DEFAULT_DISCOUNT) x on-demand."""
    if discount is None:
        if itype.reserved_hourly is not None:
            return float(itype.reserved_hourly)
        discount = DEFAULT_DISCOUNT
    return (1.0 - discount) * itype.ondemand_hourly


__all__ = ["DEFAULT_DISCOUNT", "check_discount", "check_reserved", "parse_reserved",
           "ran_where", "reserved_rate", "reserved_text"]
