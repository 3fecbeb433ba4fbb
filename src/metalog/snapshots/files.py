"""Snapshot file names: they belong to the log directory and live in ``metalog.log.snapshot_files``;
re-exported here for code that imports them from ``metalog.snapshots``."""

from metalog.log.snapshot_files import (
    DELETED_SUFFIX,
    PART_SUFFIX,
    SUFFIX,
    SnapshotId,
    clean_snapshot_dir,
    list_snapshots,
    parse_name,
)

__all__ = ["DELETED_SUFFIX", "PART_SUFFIX", "SUFFIX", "SnapshotId", "clean_snapshot_dir", "list_snapshots",
           "parse_name"]
