"""Per-broker and per-log-directory timelines in change form, and what each failed directory took offline.

``broker_timeline`` has a row for a broker only in a batch after which one of its values changed (its state,
its replicas by directory state, its offline replicas, the partitions it leads); ``directory_timeline`` the same
for each (broker, log directory); ``directory_failures`` a row per partition with a replica on a directory the
moment it failed (one row with no partition when it held none). A 5M-batch log so writes a row per change, not a
row per batch and broker.

The counts come from the published image after each batch, like ``timeline.RowCounter``'s, and as
incrementally: images share every unchanged object, so ``BrokerCounter`` recounts a partition only when its
PartitionRegistration is a new object with another leader, replicas or directories, and then only the replicas
whose entry moved. It keeps replicas, leaders and partitions without a leader per broker and directory (the
placeholders MIGRATING, UNASSIGNED and LOST too); whether a replica is offline depends on its broker and
directory only (``state.image.offline_replicas``), so the offline counts follow from those counts and the
broker's registration when a row is written, and a broker that is fenced or registers anew costs no partition
recount. ``full_counts`` counts from scratch, straight from the definitions: the counter must always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from metalog.analysis.topic_changes import PartitionCache, TopicIds
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage

NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER

# Column name -> what it holds; the order is the files' column order. docs/analysis.md and --help print these.
BROKER_COLUMNS: dict[str, str] = {
    "cluster": "the cluster (its metadata log directory's name, as in timeline_batches)",
    "last_offset": "the last offset of the batch after which the broker's values changed (a row per change)",
    "timestamp": "the batch's max timestamp, epoch milliseconds",
    "broker": "the broker id",
    "state": "unregistered (no registration: only replicas name it, or it left the cluster), fenced, unfenced",
    "controlled_shutdown": "1 when the broker is in controlled shutdown (fenced or not)",
    "zk": "1 when it is a ZooKeeper broker being migrated (isMigratingZkBroker)",
    "log_dirs": "the log directories it registered (0 before metadata.version 3.7-IV2)",
    "replicas_migrating": "its replicas whose directory is MIGRATING",
    "replicas_unassigned": "its replicas whose directory is UNASSIGNED",
    "replicas_lost": "its replicas whose directory is LOST",
    "replicas_assigned": "its replicas in a real directory",
    "offline_replicas": "its replicas that are offline (it is fenced or unregistered, or their directory is not "
                        "online on it)",
    "leaders": "partitions it leads",
}
DIRECTORY_COLUMNS: dict[str, str] = {
    "cluster": "the cluster (its metadata log directory's name, as in timeline_batches)",
    "last_offset": "the last offset of the batch after which the directory's values changed (a row per change)",
    "timestamp": "the batch's max timestamp, epoch milliseconds",
    "broker": "the broker id",
    "directory": "the log directory's id (a real one: replicas in MIGRATING, UNASSIGNED or LOST are counted per "
                 "broker in broker_timeline)",
    "online": "1 when the broker is registered and the directory is online on it (it lists the directory, or "
              "lists none: Kafka's DirectoryId.isOnline)",
    "replicas": "replicas on the broker in this directory",
    "leaders": "of them, leaders",
    "offline_replicas": "of them, offline (the directory is not online, or the broker is fenced)",
    "offline_partitions": "partitions with a replica here that have no leader (leader -1)",
}
FAILURE_COLUMNS: dict[str, str] = {
    "cluster": "the cluster (its metadata log directory's name, as in timeline_batches)",
    "offset": "the last offset of the batch in which the broker stopped listing the directory (same broker "
              "epoch: it went offline; the directory-failure event)",
    "timestamp": "the batch's max timestamp, epoch milliseconds",
    "broker": "the broker id",
    "directory": "the failed directory's id",
    "topic": "the topic of a partition with a replica on the failed directory (empty: it held none)",
    "partition": "the partition (-1: the directory held none)",
    "leader": "the partition's leader after the batch (-1: none, the failure took the partition offline)",
}
INT_COLUMNS = frozenset({"last_offset", "timestamp", "broker", "controlled_shutdown", "zk", "log_dirs",
                         "replicas_migrating", "replicas_unassigned", "replicas_lost", "replicas_assigned",
                         "offline_replicas", "leaders", "online", "replicas", "offline_partitions", "offset",
                         "partition", "leader"})

# the values a broker or a directory has when nothing names it (what a table shows before its first row)
BROKER_ZERO = ("unregistered", 0, 0, 0, 0, 0, 0, 0, 0, 0)
DIRECTORY_ZERO = (0, 0, 0, 0, 0)
_BROKER_VALUES = tuple(BROKER_COLUMNS)[4:]
_DIRECTORY_VALUES = tuple(DIRECTORY_COLUMNS)[5:]

# one partition: has no leader; per replica (broker, directory, leads)
Contribution = tuple[bool, tuple[tuple[int, Uuid, bool], ...]]


@dataclass
class BrokerTables:
    """Rows of broker_timeline, directory_timeline and directory_failures (dicts in their columns' order).

    ``first``: (last offset, timestamp) of the first batch a counter saw, or None if it saw none. A counter
    starts knowing nothing, so that batch's rows name every broker and directory with values other than the
    zero ones, changed or not; ``join`` turns the first rows of a later range into changes."""

    brokers: list[dict[str, Any]] = field(default_factory=list)
    directories: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    first: tuple[int, int] | None = None

    def extend(self, other: BrokerTables) -> None:
        """Another cluster's tables after these."""
        self.brokers += other.brokers
        self.directories += other.directories
        self.failures += other.failures

    def plain(self) -> tuple[Any, ...]:
        """As lists, dicts, str and int (what marshal sends)."""
        return self.brokers, self.directories, self.failures, self.first

    @classmethod
    def from_plain(cls, plain: Sequence[Any]) -> BrokerTables:
        brokers, directories, failures, first = plain
        return cls(brokers, directories, failures, None if first is None else tuple(first))


def _kind(directory: Uuid) -> int:
    """Index of a replica's directory state among (migrating, unassigned, lost, assigned)."""
    if directory == MIGRATING:
        return 0
    if directory == UNASSIGNED:
        return 1
    if directory == LOST:
        return 2
    return 3


def _real(directory: Uuid) -> bool:
    return directory != MIGRATING and directory != UNASSIGNED and directory != LOST


def _offline(broker: BrokerRegistration | None, directory: Uuid) -> bool:
    """``state.image.offline_replicas``' rule for one replica: it depends on its broker and its directory only."""
    return broker is None or broker.fenced or not broker.has_online_dir(directory)


def _contribution(part: PartitionRegistration) -> Contribution:
    """What one partition adds to the counts: whether it has no leader, and per replica (broker, directory,
    leads). Whether a replica is offline is not in it: that follows from its broker and directory, so a broker
    that registers anew changes no partition's contribution."""
    leader = part.leader
    return leader == NO_LEADER, tuple((replica, directory, replica == leader)
                                      for replica, directory in zip(part.replicas, part.directories, strict=True))


def _broker_values(broker: BrokerRegistration | None, dirs: dict[Uuid, list[int]] | None) -> tuple[Any, ...]:
    """A broker's values from its registration and its replicas' counts per directory."""
    by_kind, offline, leaders = [0, 0, 0, 0], 0, 0
    for directory, (replicas, leads, _) in (dirs or {}).items():
        by_kind[_kind(directory)] += replicas
        leaders += leads
        if replicas and _offline(broker, directory):
            offline += replicas
    if broker is None:
        return ("unregistered", 0, 0, 0, *by_kind, offline, leaders)
    return ("fenced" if broker.fenced else "unfenced", int(broker.in_controlled_shutdown),
            int(broker.is_migrating_zk_broker), len(broker.directories), *by_kind, offline, leaders)


def _directory_values(broker: BrokerRegistration | None, directory: Uuid, counts: Sequence[int] | None,
                      ) -> tuple[int, ...]:
    replicas, leaders, leaderless = counts or (0, 0, 0)
    return (int(broker is not None and broker.has_online_dir(directory)), replicas, leaders,
            replicas if _offline(broker, directory) else 0, leaderless)


def lost_directories(before: dict[int, BrokerRegistration],
                     after: dict[int, BrokerRegistration]) -> list[tuple[int, Uuid]]:
    """(broker, directory) of each directory a broker stopped listing without registering again (same epoch):
    Kafka's controller takes such a directory offline (ReplicationControlManager.handleDirectoriesOffline). The
    rule of ``events.directory_failures``."""
    out = []
    for bid, broker in after.items():
        old = before.get(bid)
        if old is None or old is broker or old.epoch != broker.epoch:
            continue
        out += [(bid, d) for d in old.directories if d not in broker.directories]
    return out


class BrokerCounter:
    """broker_timeline, directory_timeline and directory_failures rows for successive images of one cluster.

    ``brokers_before``: the brokers before the first batch (a directory failure shows against them); the counts
    start from nothing, so the first batch's rows name everything (see ``BrokerTables.first``)."""

    def __init__(self, cluster: str, brokers_before: dict[int, BrokerRegistration] | None = None) -> None:
        self.cluster = cluster
        self.tables = BrokerTables()
        self._before = brokers_before if brokers_before is not None else {}
        self._brokers: dict[int, BrokerRegistration] | None = None  # the brokers counted (None: nothing yet)
        self._topics: dict[Uuid, TopicImage] | None = None
        self._cache: PartitionCache[Contribution] = PartitionCache()
        # per broker, per directory (the placeholders too): [replicas, leaders, partitions without a leader]
        self._counts: dict[int, dict[Uuid, list[int]]] = {}
        self._shown_brokers: dict[int, tuple[Any, ...]] = {}  # the values of each broker's last row
        self._shown_dirs: dict[tuple[int, Uuid], tuple[int, ...]] = {}
        self._dirty_brokers: set[int] = set()
        self._dirty_dirs: set[tuple[int, Uuid]] = set()
        self._names: dict[Uuid, str] = {}  # directory ids in Kafka's text form

    def batch(self, image: MetadataImage, last_offset: int, timestamp: int, changes: TopicIds | None = None) -> None:
        """Count the image published after a batch; rows for what changed go to ``tables``. ``changes``: the
        topics that may differ from the image counted before (``topic_changes``), or None to compare all."""
        if self.tables.first is None:
            self.tables.first = (last_offset, timestamp)
        brokers, topics = image.brokers, image.topics
        if brokers is self._brokers and topics is self._topics:
            return
        if topics is not self._topics:
            self._recount_topics(topics, changes)
        if brokers is not self._brokers:
            old = self._brokers if self._brokers is not None else {}
            for bid in brokers.keys() | old.keys():
                before, after = old.get(bid), brokers.get(bid)
                if before is after:
                    continue
                self._dirty_brokers.add(bid)  # its state, and which of its replicas are offline
                dirs = set(self._counts.get(bid, ()))
                for reg in (before, after):
                    if reg is not None:
                        dirs.update(reg.directories)
                self._dirty_dirs.update((bid, d) for d in dirs if _real(d))
        self._brokers, self._topics = brokers, topics
        if brokers is not self._before:
            self._failures(lost_directories(self._before, brokers), image, last_offset, timestamp)
            self._before = brokers
        self._emit(brokers, last_offset, timestamp)

    # ---- counting ---------------------------------------------------------------------------------------
    def _recount_topics(self, topics: dict[Uuid, TopicImage], changes: TopicIds | None) -> None:
        """Changed topics only, and in them the partitions whose leader, replicas or directories changed (an
        ISR change keeps the counts)."""
        gone, moved = self._cache.update(topics, changes)
        for contribution in gone:
            self._add(contribution, -1)
        for parts, pid, part, entry in moved:
            if entry is None:
                new = _contribution(part)
                self._add(new, 1)
            else:
                old = entry[0]
                if old.leader == part.leader and old.replicas == part.replicas and old.directories == part.directories:
                    parts[pid] = (part, entry[1])  # an ISR change: the same counts
                    continue
                new = _contribution(part)
                self._replace(entry[1], new)
            parts[pid] = (part, new)

    def _replace(self, old: Contribution, new: Contribution) -> None:
        if old[0] == new[0] and len(old[1]) == len(new[1]):
            # the same replicas, mostly, and a leader moved: count only the replicas whose entry changed
            pairs = [(o, n) for o, n in zip(old[1], new[1], strict=True) if o != n]
            self._add((old[0], tuple(o for o, _ in pairs)), -1)
            self._add((new[0], tuple(n for _, n in pairs)), 1)
        else:
            self._add(old, -1)
            self._add(new, 1)

    def _add(self, contribution: Contribution, sign: int) -> None:
        leaderless, replicas = contribution
        counts, dirty_brokers, dirty_dirs = self._counts, self._dirty_brokers, self._dirty_dirs
        for bid, directory, leads in replicas:
            per_dir = counts.get(bid)
            if per_dir is None:
                per_dir = counts[bid] = {}
            c = per_dir.get(directory)
            if c is None:
                c = per_dir[directory] = [0, 0, 0]
            c[0] += sign
            c[1] += sign * leads
            c[2] += sign * leaderless
            dirty_brokers.add(bid)
            dirty_dirs.add((bid, directory))

    # ---- rows -------------------------------------------------------------------------------------------
    def _emit(self, brokers: dict[int, BrokerRegistration], last_offset: int, timestamp: int) -> None:
        if not self._dirty_brokers and not self._dirty_dirs:  # an ISR change, say
            return
        cluster, counts, names = self.cluster, self._counts, self._names
        shown, rows = self._shown_brokers, self.tables.brokers
        for bid in sorted(self._dirty_brokers):
            values = _broker_values(brokers.get(bid), counts.get(bid))
            if values != shown.get(bid, BROKER_ZERO):
                rows.append(dict(zip(BROKER_COLUMNS, (cluster, last_offset, timestamp, bid, *values), strict=True)))
                _remember(shown, bid, values, BROKER_ZERO)
        self._dirty_brokers.clear()
        shown_dirs, rows = self._shown_dirs, self.tables.directories
        named = []
        for bid, directory in self._dirty_dirs:
            if _real(directory):
                name = names.get(directory)
                if name is None:
                    name = names[directory] = str(directory)
                named.append((bid, name, directory))
        for bid, name, directory in sorted(named):  # the order join's rows take too
            values = _directory_values(brokers.get(bid), directory, counts.get(bid, {}).get(directory))
            if values != shown_dirs.get((bid, directory), DIRECTORY_ZERO):
                rows.append(dict(zip(DIRECTORY_COLUMNS, (cluster, last_offset, timestamp, bid, name, *values),
                                     strict=True)))
                _remember(shown_dirs, (bid, directory), values, DIRECTORY_ZERO)
        self._dirty_dirs.clear()

    def _failures(self, lost: list[tuple[int, Uuid]], image: MetadataImage, last_offset: int,
                  timestamp: int) -> None:
        """The partitions with a replica on each lost directory (a rare event: every partition is looked at)."""
        for bid, directory in lost:
            found = [(image.topics[tid].name, pid, part.leader)
                     for tid, (_, parts) in self._cache.topics.items() for pid, (part, _) in parts.items()
                     if bid in part.replicas and part.directory(bid) == directory]
            rows = sorted(found) or [("", -1, NO_LEADER)]  # a directory that held no replica: one row, empty
            self.tables.failures += [{"cluster": self.cluster, "offset": last_offset, "timestamp": timestamp,
                                      "broker": bid, "directory": str(directory), "topic": topic,
                                      "partition": pid, "leader": leader} for topic, pid, leader in rows]


def _remember(shown: dict[Any, Any], key: Any, values: Any, zero: Any) -> None:
    if values == zero:
        shown.pop(key, None)
    else:
        shown[key] = values


# ---- the definitions, from scratch ----------------------------------------------------------------------------
def full_counts(image: MetadataImage) -> tuple[dict[int, tuple[Any, ...]], dict[tuple[int, str], tuple[int, ...]]]:
    """Every broker's and every directory's values in ``image``, counted from scratch replica by replica with
    ``MetadataImage.offline_replicas`` (entries with the zero values left out): what the rows of
    ``BrokerCounter`` up to that image must add up to."""
    per_broker: dict[int, list[int]] = {b: [0] * 6 for b in image.brokers}
    per_dir: dict[tuple[int, Uuid], list[int]] = {(b, d): [0] * 4 for b, reg in image.brokers.items()
                                                   for d in reg.directories}
    for topic in image.topics.values():
        for part in topic.partitions.values():
            offline = image.offline_replicas(part)
            for replica, directory in zip(part.replicas, part.directories, strict=True):
                counts = per_broker.setdefault(replica, [0] * 6)
                counts[_kind(directory)] += 1
                counts[4] += replica in offline
                counts[5] += replica == part.leader
                if _real(directory):
                    d = per_dir.setdefault((replica, directory), [0] * 4)
                    d[0] += 1
                    d[1] += replica == part.leader
                    d[2] += replica in offline
                    d[3] += part.leader == NO_LEADER
    brokers = {}
    for b, counts in per_broker.items():
        reg = image.brokers.get(b)
        head = ("unregistered", 0, 0, 0) if reg is None else \
            ("fenced" if reg.fenced else "unfenced", int(reg.in_controlled_shutdown), int(reg.is_migrating_zk_broker),
             len(reg.directories))
        brokers[b] = (*head, *counts)
    dirs = {(b, str(d)): (int(b in image.brokers and image.brokers[b].has_online_dir(d)), *c)
            for (b, d), c in per_dir.items()}
    return ({b: v for b, v in brokers.items() if v != BROKER_ZERO},
            {k: v for k, v in dirs.items() if v != DIRECTORY_ZERO})


def current(tables: BrokerTables, through: int) -> tuple[dict[int, tuple[Any, ...]],
                                                          dict[tuple[int, str], tuple[int, ...]]]:
    """The values the rows of ``tables`` (one cluster) give each broker and directory after offset ``through``
    (entries with the zero values left out): the change form read back."""
    brokers: dict[int, tuple[Any, ...]] = {}
    dirs: dict[tuple[int, str], tuple[int, ...]] = {}
    for row in tables.brokers:
        if row["last_offset"] <= through:
            _remember(brokers, row["broker"], tuple(row[c] for c in _BROKER_VALUES), BROKER_ZERO)
    for row in tables.directories:
        if row["last_offset"] <= through:
            _remember(dirs, (row["broker"], row["directory"]), tuple(row[c] for c in _DIRECTORY_VALUES),
                      DIRECTORY_ZERO)
    return brokers, dirs


# ---- ranges of the parallel replay ----------------------------------------------------------------------------
def join(parts: Sequence[BrokerTables]) -> BrokerTables:
    """The tables of consecutive ranges of one cluster, as one counter over the whole log writes them: each
    range's first rows (complete, see ``BrokerTables.first``) become the changes against what the ranges before
    it left, and a broker or directory that those left with values but the first rows leave out gets its row
    of zero values."""
    out = BrokerTables()
    cluster = next((r["cluster"] for p in parts for r in (*p.brokers[:1], *p.directories[:1])), "")
    shown_brokers: dict[int, tuple[Any, ...]] = {}
    shown_dirs: dict[tuple[int, str], tuple[int, ...]] = {}
    for part in parts:
        if part.first is None:
            continue
        if out.first is None:
            out.first = part.first
        at, ts = part.first
        head = {"cluster": cluster, "last_offset": at, "timestamp": ts}
        out.brokers += _rebase(part.brokers, head, shown_brokers, ("broker",), _BROKER_VALUES, BROKER_ZERO)
        out.directories += _rebase(part.directories, head, shown_dirs, ("broker", "directory"), _DIRECTORY_VALUES,
                                   DIRECTORY_ZERO)
        out.failures += part.failures
    return out


def _rebase(rows: list[dict[str, Any]], head: dict[str, Any], shown: dict[Any, Any], ident: tuple[str, ...],
            columns: Sequence[str], zero: tuple[Any, ...]) -> list[dict[str, Any]]:
    """``rows`` of one range: its first batch's (``head``: cluster, offset and time; complete) against ``shown``,
    the values the earlier rows left, then the rest as they are; ``shown`` follows. ``ident``: the key columns."""
    def key(row: dict[str, Any]) -> Any:
        return row[ident[0]] if len(ident) == 1 else tuple(row[c] for c in ident)

    n = next((i for i, r in enumerate(rows) if r["last_offset"] != head["last_offset"]), len(rows))
    first: dict[Any, dict[str, Any]] = {key(r): r for r in rows[:n]}
    out = []
    for k in sorted(first.keys() | shown.keys()):
        row = first.get(k)
        if row is None:
            ids = (k,) if len(ident) == 1 else k
            row = {**head, **dict(zip(ident, ids, strict=True)), **dict(zip(columns, zero, strict=True))}
        values = tuple(row[c] for c in columns)
        if values != shown.get(k, zero):
            out.append(row)
            _remember(shown, k, values, zero)
    for row in rows[n:]:
        _remember(shown, key(row), tuple(row[c] for c in columns), zero)
        out.append(row)
    return out
