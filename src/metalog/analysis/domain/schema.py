"""The analysis' tables, each defined once: its columns in the files' order, each column's kind and meaning.

Both engines, the Parquet, Arrow and Spark schemas (``outputs.layout``), the CSV writer, the report and ``metalog
analyze --help`` read these. Every table has the cluster (the Parquet partition column), first but in
timeline_buckets (after its ``bucket_start``).

Kinds: ``int`` (int64), ``time`` (epoch milliseconds in memory; Parquet's timestamp(MILLIS, UTC) on disk),
``text`` (UTF-8).

No column is ever null: every row has a value in each (where there is nothing to say, the value a column's help
names: an empty text, a -1). The files say so: every column is required (Parquet's REQUIRED, Arrow's ``not null``),
and a writer handed a null fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    INT = "int"
    TIME = "time"
    TEXT = "text"


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    help: str


@dataclass(frozen=True)
class Table:
    """A table's name, what a row is, and its columns (the cluster among them)."""

    name: str
    row: str  # what one row is, for --help
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def values(self) -> tuple[Column, ...]:
        """The columns but the cluster: what a cluster's rows hold (the cluster is the partition)."""
        return tuple(c for c in self.columns if c.name != CLUSTER)

    @property
    def cluster_at(self) -> int:
        """The cluster column's place among the columns."""
        return self.names.index(CLUSTER)

    def kind(self, name: str) -> Kind:
        for column in self.columns:
            if column.name == name:
                return column.kind
        raise KeyError(f"{self.name} has no column {name!r}")


INT, TIME, TEXT = Kind.INT, Kind.TIME, Kind.TEXT
CLUSTER = "cluster"  # every table's first column, and the partition of its Parquet files


def _cluster(text: str = "the cluster (see metalog analyze --help: NAME=LOGDIR, cluster.id, or the directory's "
                         "name)") -> Column:
    return Column(CLUSTER, TEXT, text)


TIMELINE = Table("timeline_batches", "a row per batch", (
    _cluster("the cluster's name (one analysis may cover a fleet of clusters)"),
    Column("last_offset", INT, "the last offset of the batch (data or control); the row is the state Kafka's loader "
                               "published after it (inside an open transaction: the one published before the "
                               "transaction)"),
    Column("timestamp", TIME, "the batch's max timestamp, epoch milliseconds"),
    Column("metadata_version", TEXT, "the metadata.version feature, e.g. 3.7-IV2 (empty before it is set)"),
    Column("zk_migration_state", TEXT, "NONE, PRE_MIGRATION, MIGRATION, POST_MIGRATION (ZkMigrationStateRecord)"),
    Column("phase", TEXT, "native, pre-migration, hybrid (MIGRATION with ZK brokers left), dual-write (MIGRATION, "
                          "every broker on KRaft), post-migration"),
    Column("dir_transition", TEXT, "KIP-858: not-started (no broker registered log dirs), in-progress, complete "
                                   "(every broker registered its dirs and no replica is MIGRATING or UNASSIGNED)"),
    Column("brokers_fenced", INT, "FencedBrokerCount: registered brokers that are fenced"),
    Column("brokers_unfenced", INT, "ActiveBrokerCount: registered brokers that are not fenced, in controlled "
                                    "shutdown or not"),
    Column("brokers_controlled_shutdown", INT, "ControlledShutdownBrokerCount: registered brokers in controlled "
                                               "shutdown, fenced or not"),
    Column("brokers_zk", INT, "MigratingZkBrokerCount: registered brokers that are ZooKeeper brokers being migrated"),
    Column("topics", INT, "GlobalTopicCount: topics"),
    Column("partitions", INT, "GlobalPartitionCount: partitions"),
    Column("offline_partitions", INT, "OfflinePartitionsCount: partitions without a leader (leader -1)"),
    Column("preferred_replica_imbalance", INT, "PreferredReplicaImbalanceCount: partitions whose leader is not "
                                               "their first replica (one without a leader counts, unless it has no "
                                               "replicas)"),
    Column("replicas_migrating", INT, "replicas whose directory is MIGRATING (placed before directories were "
                                      "tracked)"),
    Column("replicas_unassigned", INT, "replicas whose directory is UNASSIGNED (the broker has not chosen one yet)"),
    Column("replicas_lost", INT, "replicas whose directory is LOST"),
    Column("replicas_assigned", INT, "replicas in a real directory"),
    Column("offline_replicas", INT, "replicas whose broker is missing or fenced, or whose directory is not online"),
    Column("open_transaction", INT, "1 when a metadata transaction is open after the batch (its records not yet "
                                    "visible)"),
))

BUCKETS = Table("timeline_buckets", "the last row of each cluster in each time bucket (--bucket)", (
    Column("bucket_start", TIME, "the bucket's start, epoch ms"),
    *TIMELINE.columns,
))

EVENTS = Table("events", "an event", (
    _cluster("the cluster's name"),
    Column("offset", INT, "the offset of the batch the event shows in (of the abort record, for an aborted "
                          "transaction)"),
    Column("timestamp", TIME, "the batch's max timestamp, epoch milliseconds"),
    Column("event", TEXT, "phase-change, dir-transition, metadata-version, directory-failure, aborted-transaction, "
                          "controller-leader (a LeaderChange control batch)"),
    Column("detail", TEXT, "what changed, e.g. 'hybrid -> dual-write', 'broker 2 lost directory <uuid>' or "
                           "'controller 3000 leads in epoch 5' (LeaderChangeMessage's leaderId; the epoch is the "
                           "batch's partitionLeaderEpoch)"),
))

BROKERS = Table("broker_timeline", "a row when a broker's values change", (
    _cluster("the cluster (as in timeline_batches)"),
    Column("last_offset", INT, "the last offset of the batch after which the broker's values changed (a row per "
                               "change)"),
    Column("timestamp", TIME, "the batch's max timestamp, epoch milliseconds"),
    Column("broker", INT, "the broker id"),
    Column("state", TEXT, "unregistered (no registration: only replicas name it, or it left the cluster), fenced, "
                          "unfenced"),
    Column("controlled_shutdown", INT, "1 when the broker is in controlled shutdown (fenced or not)"),
    Column("zk", INT, "1 when it is a ZooKeeper broker being migrated (isMigratingZkBroker)"),
    Column("log_dirs", INT, "the log directories it registered (0 before metadata.version 3.7-IV2)"),
    Column("replicas_migrating", INT, "its replicas whose directory is MIGRATING"),
    Column("replicas_unassigned", INT, "its replicas whose directory is UNASSIGNED"),
    Column("replicas_lost", INT, "its replicas whose directory is LOST"),
    Column("replicas_assigned", INT, "its replicas in a real directory"),
    Column("offline_replicas", INT, "its replicas that are offline (it is fenced or unregistered, or their directory "
                                    "is not online on it)"),
    Column("leaders", INT, "partitions it leads"),
))

DIRECTORIES = Table("directory_timeline", "a row when a log directory's values change", (
    _cluster("the cluster (as in timeline_batches)"),
    Column("last_offset", INT, "the last offset of the batch after which the directory's values changed (a row per "
                               "change)"),
    Column("timestamp", TIME, "the batch's max timestamp, epoch milliseconds"),
    Column("broker", INT, "the broker id"),
    Column("directory", TEXT, "the log directory's id (a real one: replicas in MIGRATING, UNASSIGNED or LOST are "
                              "counted per broker in broker_timeline)"),
    Column("online", INT, "1 when the broker is registered and the directory is online on it (it lists the "
                          "directory, or lists none: Kafka's DirectoryId.isOnline)"),
    Column("replicas", INT, "replicas on the broker in this directory"),
    Column("leaders", INT, "of them, leaders"),
    Column("offline_replicas", INT, "of them, offline (the directory is not online, or the broker is fenced)"),
    Column("offline_partitions", INT, "partitions with a replica here that have no leader (leader -1)"),
))

FAILURES = Table("directory_failures", "a row per partition on a directory when it failed", (
    _cluster("the cluster (as in timeline_batches)"),
    Column("offset", INT, "the last offset of the batch in which the broker stopped listing the directory (same "
                          "broker epoch: it went offline; the directory-failure event)"),
    Column("timestamp", TIME, "the batch's max timestamp, epoch milliseconds"),
    Column("broker", INT, "the broker id"),
    Column("directory", TEXT, "the failed directory's id"),
    Column("topic", TEXT, "the topic of a partition with a replica on the failed directory (empty: it held none)"),
    Column("partition", INT, "the partition (-1: the directory held none)"),
    Column("leader", INT, "the partition's leader after the batch (-1: none, the failure took the partition "
                          "offline)"),
))

# every table, in the order they are written and listed
TABLES: dict[str, Table] = {t.name: t for t in (TIMELINE, BUCKETS, EVENTS, BROKERS, DIRECTORIES, FAILURES)}

# the values of the text columns that come from small vocabularies (a column's codes index these)
PHASES = ("native", "pre-migration", "hybrid", "dual-write", "post-migration")
DIR_TRANSITIONS = ("not-started", "in-progress", "complete")
BROKER_STATES = ("unregistered", "fenced", "unfenced")
EVENT_KINDS = ("phase-change", "dir-transition", "metadata-version", "directory-failure", "aborted-transaction",
               "controller-leader")
