"""Kafka's leader-epoch-checkpoint: which leader epoch starts at which offset.

File format (CheckpointFile, version 0)::

    0
    <number of entries>
    <epoch> <start offset>
    ...
"""

from __future__ import annotations

import bisect
from pathlib import Path

from metalog.errors import LogError
from metalog.log.files import atomic_write

FILE_NAME = "leader-epoch-checkpoint"


class LeaderEpochCache:
    """Entries (epoch, start offset), both strictly increasing; saved atomically when they change."""

    def __init__(self, path: Path | None, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path
        self.entries: list[tuple[int, int]] = list(entries or [])

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache:
        lines = path.read_text().splitlines()
        try:
            if lines[0].strip() != "0":
                raise LogError(f"unknown leader-epoch-checkpoint version {lines[0]!r}", file=path)
            count = int(lines[1])
            entries = [(int(e), int(o)) for e, o in (line.split() for line in lines[2:2 + count])]
        except (IndexError, ValueError) as e:
            raise LogError(f"malformed leader-epoch-checkpoint: {e}", file=path) from None
        if len(entries) != count:
            raise LogError(f"leader-epoch-checkpoint announces {count} entries, holds {len(entries)}", file=path)
        for (e1, o1), (e2, o2) in zip(entries, entries[1:], strict=False):
            if e2 <= e1 or o2 < o1:
                raise LogError(f"leader-epoch-checkpoint entries out of order: ({e1}, {o1}) then ({e2}, {o2})",
                               file=path)
        return cls(path, entries)

    def text(self) -> str:
        return "\n".join(["0", str(len(self.entries))] + [f"{e} {o}" for e, o in self.entries]) + "\n"

    def save(self) -> None:
        if self.path is not None:
            atomic_write(self.path, self.text())

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def epoch_for(self, offset: int) -> int | None:
        """The epoch that was leading when ``offset`` was written, if known."""
        i = bisect.bisect_right(self.entries, offset, key=_start_offset)
        return self.entries[i - 1][0] if i else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (only a newer epoch is recorded, as in Kafka)."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return False
        if self.entries and start_offset < self.entries[-1][1]:
            raise LogError(f"epoch {epoch} cannot start at {start_offset}, before epoch "
                           f"{self.entries[-1][0]} (from {self.entries[-1][1]})", file=self.path)
        self.entries.append((epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop epochs that start at or after ``end_offset`` (the log was cut there)."""
        kept = [(e, o) for e, o in self.entries if o < end_offset]
        changed = kept != self.entries
        self.entries = kept
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """Drop epochs wholly before ``start_offset``; the one that covers it now starts there."""
        before = [(e, o) for e, o in self.entries if o <= start_offset]
        after = [(e, o) for e, o in self.entries if o > start_offset]
        kept = ([(before[-1][0], start_offset)] if before else []) + after
        changed = kept != self.entries
        self.entries = kept
        return changed


def _start_offset(entry: tuple[int, int]) -> int:
    return entry[1]
