"""One line per cluster (the report's and ``metalog demo``'s), and the fleet overview's row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

CHANGES = ("phase-change", "dir-transition", "metadata-version")  # what "last change" means in the fleet table
FLEET_COLUMNS = ("cluster", "phase", "JBOD", "metadata.version", "brokers", "offline partitions", "offline replicas",
                 "without a directory", "directory failures", "last change", "last batch")


def fmt_time(ms: int) -> str:
    """``2023-11-14 22:13:20`` (UTC); a time no datetime can hold (before year 1, after 9999: any int64 is a
    batch timestamp) as its epoch milliseconds, ``4611686018427387904ms``."""
    try:
        at = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms}ms"
    return f"{at.year:04d}-{at:%m-%d %H:%M:%S}"  # (strftime's %Y leaves a year before 1000 unpadded on Linux)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Latest:
    """A cluster's timeline after its last batch: what its summary line and its fleet row say.
    ``offline_partitions`` is None when the timeline predates Kafka's controller metrics."""

    phase: str
    phase_since: int  # when the last phase began
    dir_transition: str
    metadata_version: str | None
    brokers_fenced: int
    brokers_unfenced: int
    brokers_controlled_shutdown: int
    brokers_zk: int
    topics: int
    partitions: int
    offline_partitions: int | None
    offline_replicas: int
    replicas_migrating: int
    replicas_unassigned: int
    last_offset: int
    timestamp: int

    @classmethod
    def of_row(cls, row: Mapping[str, Any], phase_since: int) -> Latest:
        """From the last timeline row (a table's columns by name)."""
        values: dict[str, Any] = {f.name: row.get(f.name) for f in fields(cls) if f.name != "phase_since"}
        return cls(**values, phase_since=phase_since)

    @property
    def brokers_registered(self) -> int:
        """Registered brokers: with Kafka's controller metrics active + fenced, since controlled shutdown
        overlaps them; before, the three counts were apart."""
        if self.offline_partitions is not None:
            return self.brokers_fenced + self.brokers_unfenced
        return self.brokers_fenced + self.brokers_unfenced + self.brokers_controlled_shutdown

    @property
    def without_directory(self) -> int:
        return self.replicas_migrating + self.replicas_unassigned


def phase_since(rows: Sequence[Mapping[str, Any]]) -> int:
    """When the last row's phase began."""
    last, since = rows[-1], rows[-1]["timestamp"]
    for row in reversed(rows):
        if row["phase"] != last["phase"]:
            break
        since = row["timestamp"]
    return int(since)


def summary(cluster: str, rows: Sequence[Mapping[str, Any]], events: Sequence[dict[str, Any]],
            batches: int | None = None) -> str:
    """One line on a cluster from its timeline rows (``metalog demo``'s); ``batches``: how many, when ``rows``
    holds only some."""
    latest = Latest.of_row(rows[-1], phase_since(rows))
    return summary_line(cluster, latest, events, len(rows) if batches is None else batches)


def summary_line(cluster: str, last: Latest, events: Sequence[dict[str, Any]], batches: int) -> str:
    """One line on a cluster: its state after its last batch, its events counted."""
    mine = [e["event"] for e in events if e["cluster"] == cluster]
    metrics = last.offline_partitions is not None  # Kafka's controller metrics: shutdown overlaps the others
    shutdown = f"{last.brokers_controlled_shutdown} in controlled shutdown, " if metrics else ""
    offline = f" ({last.offline_partitions} offline)" if metrics else ""
    return (f"{cluster}: {last.phase} since {fmt_time(last.phase_since)}, JBOD {last.dir_transition}, "
            f"metadata.version {last.metadata_version or 'unset'}; {last.brokers_registered} brokers "
            f"({last.brokers_fenced} fenced, {shutdown}{last.brokers_zk} on ZooKeeper), {last.topics} "
            f"topics, {last.partitions} partitions{offline}, {last.offline_replicas} offline replicas, "
            f"{last.without_directory} replicas without a directory; "
            f"{mine.count('directory-failure')} directory failures, {mine.count('aborted-transaction')} aborted "
            f"transactions; {batches:,} batches to offset {last.last_offset:,} at {fmt_time(last.timestamp)}")


def fleet_row(cluster: str, last: Latest, events: Sequence[dict[str, Any]]) -> dict[str, tuple[str, Any]]:
    """The fleet overview's columns (FLEET_COLUMNS) for one cluster: (text shown, value sorted by) each."""
    changes = [e for e in events if e["event"] in CHANGES]
    change = changes[-1] if changes else None
    failures = sum(e["event"] == "directory-failure" for e in events)
    offline_partitions = last.offline_partitions
    return {
        "cluster": (cluster, cluster),
        "phase": (f"{last.phase} since {fmt_time(last.phase_since)}", last.phase),
        "JBOD": (last.dir_transition, last.dir_transition),
        "metadata.version": (last.metadata_version or "unset", last.metadata_version),
        "brokers": (f"{last.brokers_registered} ({last.brokers_fenced} fenced, {last.brokers_zk} ZK)",
                    last.brokers_registered),
        "offline partitions": ("-" if offline_partitions is None else f"{offline_partitions:,}",
                               -1 if offline_partitions is None else offline_partitions),
        "offline replicas": (f"{last.offline_replicas:,}", last.offline_replicas),
        "without a directory": (f"{last.without_directory:,}", last.without_directory),
        "directory failures": (str(failures), failures),
        "last change": ("-" if change is None else f"{fmt_time(change['timestamp'])} {change['detail']}",
                        -1 if change is None else change["timestamp"]),
        "last batch": (f"{fmt_time(last.timestamp)} (offset {last.last_offset:,})", last.timestamp),
    }
