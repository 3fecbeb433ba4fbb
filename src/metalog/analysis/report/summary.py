"""One line per cluster (the report's and ``metalog demo``'s), and the fleet overview's row."""

from __future__ import annotations

from collections.abc import Sequence
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


def brokers_registered(row: dict[str, Any]) -> int:
    """Registered brokers: with Kafka's controller metrics (offline_partitions present) active + fenced, since
    controlled shutdown overlaps them; before, the three counts were apart."""
    if "offline_partitions" in row:
        return int(row["brokers_fenced"] + row["brokers_unfenced"])
    return int(row["brokers_fenced"] + row["brokers_unfenced"] + row["brokers_controlled_shutdown"])


def phase_since(rows: Sequence[dict[str, Any]]) -> int:
    """When the last row's phase began."""
    last, since = rows[-1], rows[-1]["timestamp"]
    for row in reversed(rows):
        if row["phase"] != last["phase"]:
            break
        since = row["timestamp"]
    return int(since)


def summary(cluster: str, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]],
            batches: int | None = None) -> str:
    """One line on a cluster; ``batches``: how many, when ``rows`` holds only its change rows."""
    last = rows[-1]
    batches = len(rows) if batches is None else batches
    mine = [e["event"] for e in events if e["cluster"] == cluster]
    metrics = "offline_partitions" in last  # Kafka's controller metrics: controlled shutdown overlaps the others
    shutdown = f"{last['brokers_controlled_shutdown']} in controlled shutdown, " if metrics else ""
    offline = f" ({last['offline_partitions']} offline)" if metrics else ""
    return (f"{cluster}: {last['phase']} since {fmt_time(phase_since(rows))}, JBOD {last['dir_transition']}, "
            f"metadata.version {last['metadata_version'] or 'unset'}; {brokers_registered(last)} brokers "
            f"({last['brokers_fenced']} fenced, {shutdown}{last['brokers_zk']} on ZooKeeper), {last['topics']} "
            f"topics, {last['partitions']} partitions{offline}, {last['offline_replicas']} offline replicas, "
            f"{last['replicas_migrating'] + last['replicas_unassigned']} replicas without a directory; "
            f"{mine.count('directory-failure')} directory failures, {mine.count('aborted-transaction')} aborted "
            f"transactions; {batches:,} batches to offset {last['last_offset']:,} at {fmt_time(last['timestamp'])}")


def fleet_row(cluster: str, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The fleet overview's columns (FLEET_COLUMNS) for one cluster: (text shown, value sorted by) each."""
    last = rows[-1]
    changes = [e for e in events if e["event"] in CHANGES]
    change = changes[-1] if changes else None
    failures = sum(e["event"] == "directory-failure" for e in events)
    offline_partitions = last.get("offline_partitions")
    return {
        "cluster": (cluster, cluster),
        "phase": (f"{last['phase']} since {fmt_time(phase_since(rows))}", last["phase"]),
        "JBOD": (last["dir_transition"], last["dir_transition"]),
        "metadata.version": (last["metadata_version"] or "unset", last["metadata_version"]),
        "brokers": (f"{brokers_registered(last)} ({last['brokers_fenced']} fenced, {last['brokers_zk']} ZK)",
                    brokers_registered(last)),
        "offline partitions": ("-" if offline_partitions is None else f"{offline_partitions:,}",
                               -1 if offline_partitions is None else offline_partitions),
        "offline replicas": (f"{last['offline_replicas']:,}", last["offline_replicas"]),
        "without a directory": (f"{last['replicas_migrating'] + last['replicas_unassigned']:,}",
                                last["replicas_migrating"] + last["replicas_unassigned"]),
        "directory failures": (str(failures), failures),
        "last change": ("-" if change is None else f"{fmt_time(change['timestamp'])} {change['detail']}",
                        -1 if change is None else change["timestamp"]),
        "last batch": (f"{fmt_time(last['timestamp'])} (offset {last['last_offset']:,})", last["timestamp"]),
    }
