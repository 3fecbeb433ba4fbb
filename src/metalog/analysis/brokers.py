"""Per-broker and per-log-directory timelines in change form, and what each failed directory took offline.

``broker_timeline`` has a row for a broker only in a batch after which one of its values changed (its state,
its replicas by directory state, its offline replicas, the partitions it leads); ``directory_timeline`` the same
for each (broker, log directory); ``directory_failures`` a row per partition with a replica on a directory the
moment it failed (one row with no partition when it held none). A 5M-batch log so writes a row per change, not a
row per batch and broker.

The counts come from the published image after each batch, like ``timeline.RowCounter``'s, and as
incrementally: images share every unchanged object, so ``BrokerCounter`` recounts a partition only when its
PartitionRegistration is a new object, or when a broker holding one of its replicas registered anew (its
fencing and its directories decide which replicas are offline: ``state.image.offline_replicas``). ``full_counts``
counts from scratch, straight from the definitions: the counter must always agree with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from typing import Any

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage

NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER

# Column name -> what it holds; the order is the files' column order. The README and --help print these.
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

PartKey = tuple[Uuid, int]  # (topic id, partition id)
# one partition: has no leader; per replica (broker, directory, directory state index, offline, leads)
Contribution = tuple[bool, tuple[tuple[int, Uuid, int, bool, bool], ...]]


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
        return cls(brokers, directories, failures, None if first is None else tuple(first))  # type: ignore[arg-type]


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
    """``state.image.offline_replicas``' rule for one replica."""
    return broker is None or broker.fenced or not broker.has_online_dir(directory)


def _contribution(part: PartitionRegistration, brokers: dict[int, BrokerRegistration]) -> Contribution:
    """What one partition adds to the counts: whether it has no leader, and per replica (broker, directory,
    its directory state's index, offline, leads). On the hot path: ``_kind`` and ``_offline`` inlined."""
    leader, out = part.leader, []
    for replica, directory in zip(part.replicas, part.directories, strict=True):
        broker = brokers.get(replica)
        if directory == MIGRATING or directory == UNASSIGNED:
            kind, offline = (0 if directory == MIGRATING else 1), broker is None or broker.fenced
        elif directory == LOST:
            kind, offline = 2, True
        else:
            kind, dirs = 3, broker.directories if broker is not None else ()
            offline = broker is None or broker.fenced or bool(dirs and directory not in dirs)
        out.append((replica, directory, kind, offline, replica == leader))
    return leader == NO_LEADER, tuple(out)


def _broker_values(broker: BrokerRegistration | None, counts: Sequence[int] | None) -> tuple[Any, ...]:
    c = counts or (0, 0, 0, 0, 0, 0)
    if broker is None:
        return ("unregistered", 0, 0, 0, *c)
    return ("fenced" if broker.fenced else "unfenced", int(broker.in_controlled_shutdown),
            int(broker.is_migrating_zk_broker), len(broker.directories), *c)


def _directory_values(broker: BrokerRegistration | None, directory: Uuid,
                      counts: Sequence[int] | None) -> tuple[int, ...]:
    return (int(broker is not None and broker.has_online_dir(directory)), *(counts or (0, 0, 0, 0)))


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
        self._parts: dict[Uuid, tuple[TopicImage, dict[int, tuple[PartitionRegistration, Contribution]]]] = {}
        self._on_broker: dict[int, set[PartKey]] = {}  # partitions with a replica on each broker
        self._broker_counts: dict[int, list[int]] = {}  # migrating, unassigned, lost, assigned, offline, leaders
        self._dir_counts: dict[tuple[int, Uuid], list[int]] = {}  # replicas, leaders, offline, offline partitions
        self._dirs_of: dict[int, set[Uuid]] = {}  # each broker's directories with counts
        self._shown_brokers: dict[int, tuple[Any, ...]] = {}  # the values of each broker's last row
        self._shown_dirs: dict[tuple[int, Uuid], tuple[int, ...]] = {}
        self._dirty_brokers: set[int] = set()
        self._dirty_dirs: set[tuple[int, Uuid]] = set()

    def batch(self, image: MetadataImage, last_offset: int, timestamp: int) -> None:
        """Count the image published after a batch; rows for what changed go to ``tables``."""
        if self.tables.first is None:
            self.tables.first = (last_offset, timestamp)
        brokers, topics = image.brokers, image.topics
        if brokers is self._brokers and topics is self._topics:
            return
        old = self._brokers if self._brokers is not None else {}
        changed_brokers = [] if brokers is self._brokers else \
            [b for b in brokers.keys() | old.keys() if brokers.get(b) is not old.get(b)]
        recounted: set[PartKey] = set()
        if topics is not self._topics:
            self._recount_topics(topics, brokers, recounted)
        for bid in changed_brokers:
            self._dirty_brokers.add(bid)
            self._dirty_dirs.update((bid, d) for d in self._dirs_of.get(bid, ()))
            for reg in (old.get(bid), brokers.get(bid)):
                if reg is not None:
                    self._dirty_dirs.update((bid, d) for d in reg.directories)
            for key in list(self._on_broker.get(bid, ())):
                if key not in recounted:
                    tid, pid = key
                    entry = self._parts[tid][1][pid]
                    self._recount(key, entry[0], brokers, entry)
                    recounted.add(key)
        self._brokers, self._topics = brokers, topics
        if brokers is not self._before:
            self._failures(lost_directories(self._before, brokers), image, last_offset, timestamp)
            self._before = brokers
        self._emit(brokers, last_offset, timestamp)

    # ---- counting ---------------------------------------------------------------------------------------
    def _recount_topics(self, topics: dict[Uuid, TopicImage], brokers: dict[int, BrokerRegistration],
                        recounted: set[PartKey]) -> None:
        """Changed topics only, and in them the partitions whose leader, replicas or directories changed (an
        ISR change keeps the counts; a partition on a broker that changed is recounted after, in ``batch``)."""
        cache = self._parts
        changed = _changed(self._topics, topics)  # the same topics: the fast way
        if changed is None:
            changed = [(tid, t) for tid, t in topics.items() if cache.get(tid, _NONE)[0] is not t]
            for tid in [t for t in cache if t not in topics]:
                for pid, entry in cache.pop(tid)[1].items():
                    self._recount((tid, pid), None, brokers, entry)
        for tid, topic in changed:
            cached = cache.get(tid)
            parts = cached[1] if cached is not None else {}
            moved = _changed(cached[0].partitions, topic.partitions) if cached is not None else None
            if moved is None:
                for pid in [p for p in parts if p not in topic.partitions]:
                    self._recount((tid, pid), None, brokers, parts.pop(pid))
                moved = topic.partitions.items()  # type: ignore[assignment]
            for pid, part in moved:  # type: ignore[union-attr]
                entry = parts.get(pid)
                if entry is not None:
                    old = entry[0]
                    if old is part:
                        continue
                    if old.leader == part.leader and old.replicas == part.replicas \
                            and old.directories == part.directories:
                        parts[pid] = (part, entry[1])
                        continue
                parts[pid] = self._recount((tid, pid), part, brokers, entry)  # type: ignore[assignment]
                recounted.add((tid, pid))
            cache[tid] = (topic, parts)

    def _recount(self, key: PartKey, part: PartitionRegistration | None, brokers: dict[int, BrokerRegistration],
                 entry: tuple[PartitionRegistration, Contribution] | None,
                 ) -> tuple[PartitionRegistration, Contribution] | None:
        """Replace a partition's counts (None: it is gone); its new cache entry, also stored in place."""
        old = entry[1] if entry is not None else None
        new = _contribution(part, brokers) if part is not None else None
        if old == new:
            return (part, new) if part is not None else None  # type: ignore[return-value]
        if old is not None:
            self._add(old, -1)
        if new is not None:
            self._add(new, 1)
        before = entry[0].replicas if entry is not None else ()
        after = part.replicas if part is not None else ()
        if before != after:  # compared in C: replicas rarely move
            for bid in set(before) - set(after):
                self._on_broker[bid].discard(key)
            for bid in set(after) - set(before):
                self._on_broker.setdefault(bid, set()).add(key)
        if part is None:
            return None
        if entry is not None and entry[0] is part:  # a broker's change: the same registration, new counts
            tid, pid = key
            self._parts[tid][1][pid] = (part, new)  # type: ignore[assignment]
        return part, new  # type: ignore[return-value]

    def _add(self, contribution: Contribution, sign: int) -> None:
        leaderless, replicas = contribution
        broker_counts, dir_counts = self._broker_counts, self._dir_counts
        dirty_brokers, dirty_dirs = self._dirty_brokers, self._dirty_dirs
        for bid, directory, kind, offline, leads in replicas:
            counts = broker_counts.get(bid)
            if counts is None:
                counts = broker_counts[bid] = [0] * 6
            counts[kind] += sign
            counts[4] += sign * offline
            counts[5] += sign * leads
            dirty_brokers.add(bid)
            if kind == 3:
                key = (bid, directory)
                d = dir_counts.get(key)
                if d is None:
                    d = dir_counts[key] = [0] * 4
                    self._dirs_of.setdefault(bid, set()).add(directory)
                d[0] += sign
                d[1] += sign * leads
                d[2] += sign * offline
                d[3] += sign * leaderless
                dirty_dirs.add(key)

    # ---- rows -------------------------------------------------------------------------------------------
    def _emit(self, brokers: dict[int, BrokerRegistration], last_offset: int, timestamp: int) -> None:
        cluster = self.cluster
        shown, counts, rows = self._shown_brokers, self._broker_counts, self.tables.brokers
        for bid in sorted(self._dirty_brokers):
            values = _broker_values(brokers.get(bid), counts.get(bid))
            if values != shown.get(bid, BROKER_ZERO):
                rows.append(dict(zip(BROKER_COLUMNS, (cluster, last_offset, timestamp, bid, *values), strict=True)))
                _remember(shown, bid, values, BROKER_ZERO)
        self._dirty_brokers.clear()
        shown_dirs, dir_counts, rows = self._shown_dirs, self._dir_counts, self.tables.directories
        for bid, directory in sorted(self._dirty_dirs, key=_dir_order):
            values = _directory_values(brokers.get(bid), directory, dir_counts.get((bid, directory)))
            if values != shown_dirs.get((bid, directory), DIRECTORY_ZERO):
                rows.append(dict(zip(DIRECTORY_COLUMNS, (cluster, last_offset, timestamp, bid, str(directory), *values),
                                     strict=True)))
                _remember(shown_dirs, (bid, directory), values, DIRECTORY_ZERO)
        self._dirty_dirs.clear()

    def _failures(self, lost: list[tuple[int, Uuid]], image: MetadataImage, last_offset: int,
                  timestamp: int) -> None:
        for bid, directory in lost:
            found = []
            for tid, pid in self._on_broker.get(bid, ()):
                part = self._parts[tid][1][pid][0]
                if part.directory(bid) == directory:
                    found.append((image.topics[tid].name, pid, part.leader))
            rows = sorted(found) or [("", -1, NO_LEADER)]  # a directory that held no replica: one row, empty
            self.tables.failures += [{"cluster": self.cluster, "offset": last_offset, "timestamp": timestamp,
                                      "broker": bid, "directory": str(directory), "topic": topic,
                                      "partition": pid, "leader": leader} for topic, pid, leader in rows]


_NONE = (None, None)


def _changed(before: dict[Any, Any] | None, after: dict[Any, Any]) -> list[tuple[Any, Any]] | None:
    """The items of ``after`` whose value is not the very object ``before`` holds, when both have the same keys
    in the same order (a delta replaces values in place: compared in C); None otherwise."""
    if before is None or len(before) != len(after) or tuple(before) != tuple(after):
        return None
    return list(compress(after.items(), map(is_not, after.values(), before.values())))


def _dir_order(key: tuple[int, Uuid]) -> tuple[int, str]:
    return key[0], str(key[1])


def _remember(shown: dict[Any, Any], key: Any, values: Any, zero: Any) -> None:
    if values == zero:
        shown.pop(key, None)
    else:
        shown[key] = values


# ---- the definitions, from scratch ----------------------------------------------------------------------------
def full_counts(image: MetadataImage) -> tuple[dict[int, tuple[Any, ...]], dict[tuple[int, str], tuple[int, ...]]]:
    """Every broker's and every directory's values in ``image``, counted from scratch (entries with the zero
    values left out): what the rows of ``BrokerCounter`` up to that image must add up to."""
    per_broker: dict[int, list[int]] = {b: [0] * 6 for b in image.brokers}
    per_dir: dict[tuple[int, Uuid], list[int]] = {}
    for bid, broker in image.brokers.items():
        for d in broker.directories:
            per_dir[(bid, d)] = [0] * 4
    for topic in image.topics.values():
        for part in topic.partitions.values():
            for replica, directory in zip(part.replicas, part.directories, strict=True):
                counts = per_broker.setdefault(replica, [0] * 6)
                broker = image.brokers.get(replica)
                offline = _offline(broker, directory)
                counts[_kind(directory)] += 1
                counts[4] += offline
                counts[5] += replica == part.leader
                if _real(directory):
                    d = per_dir.setdefault((replica, directory), [0] * 4)
                    d[0] += 1
                    d[1] += replica == part.leader
                    d[2] += offline
                    d[3] += part.leader == NO_LEADER
    brokers = {b: _broker_values(image.brokers.get(b), c) for b, c in per_broker.items()}
    dirs = {(b, str(d)): _directory_values(image.brokers.get(b), d, c) for (b, d), c in per_dir.items()}
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
