"""What a reader kept and what it left out, and why (trace loaders, spot price files):
nothing is dropped silently. Foundation: a trace and a price file report alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class LoadReport:
    """What a loader read and what it left out, and why: nothing is dropped silently.

    ``dropped`` counts rows (or jobs/tasks, as the reason says) by reason; ``notes`` are
    changes made to kept rows (e.g. "runtime 0 raised to 1 s: 173 jobs").
    """

    source: str
    rows_read: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def drop(self, reason: str, n: int = 1) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(n)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @classmethod
    def from_dict(cls, d: Mapping, source: str = "", rows: int = 0) -> LoadReport:
        """Back from ``as_dict`` (as kept in a trace's meta)."""
        return cls(d.get("source", source), d.get("rows_read", rows), dict(d.get("dropped", {})),
                   list(d.get("notes", [])))

    def as_dict(self) -> dict:
        return {"source": self.source, "rows_read": self.rows_read, "dropped": dict(self.dropped),
                "notes": list(self.notes)}

    def lines(self) -> list[str]:
        out = [f"{self.source}: read {self.rows_read:,} rows"]
        out += [f"  dropped {n:,}: {why}" for why, n in self.dropped.items()]
        out += [f"  note: {x}" for x in self.notes]
        return out
