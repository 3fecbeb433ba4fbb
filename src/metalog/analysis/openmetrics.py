"""``OUT/controller_metrics.om``: Kafka's controller metrics over time as OpenMetrics text, for the dashboards
operators already have (``promtool tsdb create-blocks-from openmetrics`` backfills a Prometheus with it).

The metric names are the ones the common Prometheus JMX-exporter rules give Kafka's controller MBeans
(``kafka.controller:type=KafkaController,name=ActiveBrokerCount`` -> ``kafka_controller_kafkacontroller_
activebrokercount``), each with a ``cluster`` label (the log directory's name); ZkMigrationState is Kafka's
numeric id (NONE 0, MIGRATION 1, PRE_MIGRATION 2, POST_MIGRATION 3, ZK 4). Kafka has no metric for replicas by
directory state or for offline replicas: those are metalog's own, under ``metalog_``.

A cluster gets a sample per batch time: the last batch of each millisecond (its state is what a scrape at that
time would have seen), a series' samples in time order. OpenMetrics wants a family's samples together and one
``# EOF``: the file is written family by family, each family cluster by cluster (each series whole, in time
order). The Spark engine's executors write each (family, cluster) block; the driver concatenates the blocks'
files in that order (a file copy, no rows).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from metalog.state.enums import ZK_MIGRATION_VALUES

FILE = "controller_metrics.om"
_KAFKA = "kafka_controller_kafkacontroller_"


@dataclass(frozen=True)
class Family:
    name: str
    help: str
    column: str  # the timeline column it reads (zk_migration_state: its numeric id)
    label: tuple[str, str] | None = None  # an extra label (name, value) beside cluster


FAMILIES: tuple[Family, ...] = (
    Family(_KAFKA + "activebrokercount", "ActiveBrokerCount: registered brokers not fenced (metalog: from the "
           "metadata log)", "brokers_unfenced"),
    Family(_KAFKA + "fencedbrokercount", "FencedBrokerCount: registered brokers that are fenced", "brokers_fenced"),
    Family(_KAFKA + "controlledshutdownbrokercount", "ControlledShutdownBrokerCount: registered brokers in "
           "controlled shutdown", "brokers_controlled_shutdown"),
    Family(_KAFKA + "migratingzkbrokercount", "MigratingZkBrokerCount: registered ZooKeeper brokers being "
           "migrated", "brokers_zk"),
    Family(_KAFKA + "globaltopiccount", "GlobalTopicCount: topics", "topics"),
    Family(_KAFKA + "globalpartitioncount", "GlobalPartitionCount: partitions", "partitions"),
    Family(_KAFKA + "offlinepartitionscount", "OfflinePartitionsCount: partitions without a leader",
           "offline_partitions"),
    Family(_KAFKA + "preferredreplicaimbalancecount", "PreferredReplicaImbalanceCount: partitions not led by "
           "their preferred replica", "preferred_replica_imbalance"),
    Family(_KAFKA + "zkmigrationstate", "ZkMigrationState: NONE 0, MIGRATION 1, PRE_MIGRATION 2, "
           "POST_MIGRATION 3, ZK 4", "zk_migration_state"),
    Family("metalog_replicas", "metalog's own: replicas by the state of their log directory (KIP-858)",
           "replicas_migrating", ("directory_state", "migrating")),
    Family("metalog_replicas", "", "replicas_unassigned", ("directory_state", "unassigned")),
    Family("metalog_replicas", "", "replicas_lost", ("directory_state", "lost")),
    Family("metalog_replicas", "", "replicas_assigned", ("directory_state", "assigned")),
    Family("metalog_offline_replicas", "metalog's own: replicas whose broker is fenced or missing or whose "
           "directory is offline", "offline_replicas"),
)
COLUMNS = tuple(dict.fromkeys(f.column for f in FAMILIES))


def value(family: Family, row: dict[str, Any]) -> int:
    return values(family, (row,))[0]


def escape(label: str) -> str:
    """An OpenMetrics label value: backslash, double quote and newline escaped."""
    return label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def seconds(ms: int) -> str:
    """Epoch milliseconds as OpenMetrics' timestamp (seconds, exactly: no float rounding)."""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    return f"{sign}{ms // 1000}.{ms % 1000:03d}"


def series(family: Family, cluster: str) -> str:
    labels = f'cluster="{escape(cluster)}"'
    if family.label is not None:
        labels += f',{family.label[0]}="{escape(family.label[1])}"'
    return f"{family.name}{{{labels}}}"


def header(family: Family) -> str:
    """The family's HELP and TYPE lines, before its first series ("" for a later series of the same family)."""
    if not family.help:
        return ""
    return f"# HELP {family.name} {family.help}\n# TYPE {family.name} gauge\n"


def last_per_ms(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last batch of each millisecond, in time order (a log's batch times may step back: sorted)."""
    last: dict[int, dict[str, Any]] = {}
    for row in rows:
        last[row["timestamp"]] = row
    return [last[t] for t in sorted(last)]


def values(family: Family, rows: Sequence[dict[str, Any]]) -> list[int]:
    """The family's sample value of each row: its column's number (zk_migration_state: Kafka's numeric id)."""
    column = family.column
    if column == "zk_migration_state":
        ids = ZK_MIGRATION_VALUES
        return [ids.get(r[column], -1) for r in rows]
    return [int(r[column]) for r in rows]


# ---- the same lines from Arrow columns (the Spark engine's executors), vectorized -------------------------------
def arrow_stamps(ms: Any) -> Any:
    """``" " + seconds(ms) + "\\n"`` of each epoch-ms value of an int64 Arrow array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    whole = pc.abs(ms)
    secs = pc.divide(whole, 1000)  # non-negative: integer division
    millis = pc.utf8_lpad(pc.cast(pc.subtract(whole, pc.multiply(secs, 1000)), pa.string()), 3, "0")
    return pc.binary_join_element_wise(pc.if_else(pc.less(ms, 0), " -", " "), pc.cast(secs, pa.string()), ".",
                                       millis, "\n", "")


def arrow_values(family: Family, column: Any) -> Any:
    """``values`` of an Arrow column, as strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if family.column == "zk_migration_state":
        ids = pa.array(list(ZK_MIGRATION_VALUES.values()), pa.int64())
        found = pc.index_in(column, value_set=pa.array(list(ZK_MIGRATION_VALUES), pa.string()))
        column = pc.fill_null(pc.take(ids, found), -1)
    elif column.null_count:
        raise ValueError(f"{family.column}: a timeline row without a value")
    return pc.cast(column, pa.string())


def arrow_text(family: Family, cluster: str, values: Any, stamps: Any) -> memoryview:
    """The series' lines for the samples of ``values`` (``arrow_values``) at ``stamps`` (``arrow_stamps``): the
    text of the joined string array's data, without a copy."""
    import pyarrow.compute as pc

    lines = pc.binary_join_element_wise(series(family, cluster) + " ", values, stamps, "")
    if not len(lines):
        return memoryview(b"")
    offsets = memoryview(lines.buffers()[1]).cast("i")  # int32 offsets of a string array
    return memoryview(lines.buffers()[2])[offsets[lines.offset]:offsets[lines.offset + len(lines)]]


def write_openmetrics(path: Path, clusters: Sequence[tuple[str, Sequence[dict[str, Any]]]]) -> Path:
    """The python engine's file: ``clusters`` is (name, timeline rows in log order) in fleet order."""
    sampled = [(name, last_per_ms(rows)) for name, rows in clusters]
    # each sample's " TIMESTAMP\n", made once per cluster for all its series (most of the formatting)
    stamps = [[f" {seconds(r['timestamp'])}\n" for r in rows] for _, rows in sampled]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for family in FAMILIES:
            f.write(header(family))
            for (name, rows), ends in zip(sampled, stamps, strict=True):
                prefix = series(family, name) + " "
                f.writelines(f"{prefix}{v}{end}" for v, end in zip(values(family, rows), ends, strict=True))
        f.write("# EOF\n")
    return path


def concatenate(path: Path, blocks: Callable[[int, str], list[Path]], clusters: Sequence[str]) -> Path:
    """The file from blocks already written: ``blocks(family index, cluster)``, the files of that series in
    order (the Spark engine's executors wrote them)."""
    with open(path, "wb") as out:
        for i, family in enumerate(FAMILIES):
            out.write(header(family).encode())
            for cluster in clusters:
                for block in blocks(i, cluster):
                    _append(block, out)
        out.write(b"# EOF\n")
    return path



def _append(block: Path, out: BinaryIO) -> None:
    """The block's bytes at the end of ``out``, copied by the kernel where it can (a 1M-record cluster's series
    are about 1 GB), else, or for what is left, through a buffer."""
    out.flush()
    copy = getattr(os, "copy_file_range", None)  # Linux
    with open(block, "rb") as f:
        size, done = os.fstat(f.fileno()).st_size, 0
        try:
            while copy is not None and done < size:
                n = copy(f.fileno(), out.fileno(), size - done)
                if n == 0:
                    break
                done += n
        except OSError:  # not between these filesystems
            pass
        out.seek(0, os.SEEK_END)  # past what the kernel wrote
        f.seek(done)
        shutil.copyfileobj(f, out)
