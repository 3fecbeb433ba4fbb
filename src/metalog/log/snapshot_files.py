"""Snapshot file names in a log directory (Kafka's Snapshots): ``<20-digit end offset>-<10-digit
epoch>.checkpoint``. They belong to the log directory (opening a log lists them and cleans leftovers);
reading and writing the files is ``metalog.snapshots``' job.

The end offset is one past the last offset the snapshot contains. A snapshot is written to
``<name>.checkpoint.part`` and renamed when complete; a deleted one is first renamed to
``<name>.checkpoint.deleted``. Leftovers of either kind are removed when a log is opened.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

SUFFIX = ".checkpoint"
PART_SUFFIX = ".checkpoint.part"
DELETED_SUFFIX = ".checkpoint.deleted"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?$")


class SnapshotId(NamedTuple):
    """Kafka's OffsetAndEpoch for a snapshot: (end offset, epoch)."""

    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SUFFIX}"

    def __str__(self) -> str:
        return f"{self.end_offset}-{self.epoch}"


def parse_name(name: str) -> tuple[SnapshotId, str] | None:
    """(id, suffix) of a snapshot file name, where suffix is '', '.part' or '.deleted'; None otherwise."""
    m = _NAME.match(name)
    if m is None:
        return None
    return SnapshotId(int(m.group(1)), int(m.group(2))), m.group(3) or ""


def list_snapshots(directory: Path) -> list[SnapshotId]:
    """The complete snapshots in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = (parse_name(p.name) for p in directory.iterdir())
    return sorted(sid for sid, suffix in (f for f in found if f) if suffix == "")


def clean_snapshot_dir(directory: Path) -> list[Path]:
    """Remove leftover ``.checkpoint.part`` and ``.checkpoint.deleted`` files; return what was removed."""
    removed = []
    for path in sorted(directory.iterdir()):
        parsed = parse_name(path.name)
        if parsed and parsed[1]:
            path.unlink()
            removed.append(path)
    return removed
