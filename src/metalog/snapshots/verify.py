"""The snapshot half of ``metalog log verify``: every ``.checkpoint`` of a log directory reads whole."""

from __future__ import annotations

import os
from pathlib import Path

from metalog.errors import MetalogError
from metalog.log.files import METADATA_PARTITION_DIR
from metalog.log.snapshot_files import list_snapshots
from metalog.log.verify import Verification
from metalog.snapshots.reader import SnapshotReader


def verify_snapshots(path: str | os.PathLike[str], v: Verification) -> Verification:
    """Read every snapshot of the log directory ``path`` (header, batches, footer) into ``v``."""
    directory = Path(path)
    if directory.name != METADATA_PARTITION_DIR:
        directory = directory / METADATA_PARTITION_DIR
    for sid in list_snapshots(directory):
        file = directory / sid.file_name
        try:
            summary = SnapshotReader(file).verify()
        except MetalogError as e:
            v.problems.append(str(e))
            continue
        v.snapshots += 1
        v.notes.append(f"snapshot {file.name}: {summary.batches} batches, {summary.records} data records, "
                       f"{summary.control_records} control records, "
                       f"kraft.version {summary.kraft_version}")
    return v
