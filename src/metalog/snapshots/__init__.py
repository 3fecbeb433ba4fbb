"""Kafka's KRaft snapshots: ``<end offset>-<epoch>.checkpoint`` files (RecordsSnapshotWriter's format)."""

from metalog.log.snapshot_files import SnapshotId, list_snapshots, parse_name
from metalog.snapshots.reader import SnapshotReader, SnapshotSummary
from metalog.snapshots.writer import SnapshotHeader, SnapshotWriter

__all__ = ["SnapshotHeader", "SnapshotId", "SnapshotReader", "SnapshotSummary", "SnapshotWriter", "list_snapshots",
           "parse_name"]
