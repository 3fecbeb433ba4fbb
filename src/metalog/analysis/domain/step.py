"""The per-batch step of one cluster: counts kept from the loader's deltas, and the tables' rows as columns.

Kafka's ControllerMetadataMetricsPublisher keeps its controller metrics from each delta it is told
(``onMetadataUpdate`` -> ControllerMetricsChanges: handleBrokerChange, handleTopicChange, each partition's
registration before and after): it never walks an image. ``ClusterStep`` does the same for every count of the
analysis, from what ``MetadataLoader(images=False)`` tells it (``published``: the delta and, through
``delta.image``, the state it changes):

- the timeline's counts (Kafka's FencedBrokerCount, ActiveBrokerCount, ControlledShutdownBrokerCount,
  MigratingZkBrokerCount, GlobalTopicCount, GlobalPartitionCount, OfflinePartitionsCount,
  PreferredReplicaImbalanceCount; replicas by directory state; offline replicas);
- per broker and per (broker, log directory): replicas, leaders, replicas by directory state, partitions without
  a leader, offline replicas.

A partition that changed is taken out of the counts as it was and put back as it is (an ISR-only change, most of a
busy log's records, leaves its counts as they are); a broker whose registration changed has its offline replicas
counted anew from its replicas per directory (whether a replica is offline depends on its broker and its directory
only, ``state.image.offline_replicas``'s rule), so a broker fenced costs no partition. Brokers, directories and
(broker, directory) pairs are numbered as they appear, their counts kept in flat lists by number.

After each batch, ``batch`` appends the timeline's row, a broker_timeline row for each broker and a
directory_timeline row for each directory whose values changed, and the batch's events (aborted transactions and
controller leader changes, told as they come; directory failures; changes of phase, JBOD transition and
metadata.version from the row before). ``take`` hands the rows over as columns (``columns.Chunk``) and starts
anew: what the step holds is the state's counts and the rows since the last ``take``.

``log_start``: the step starts at the log's first batch, knowing no row before it (the first batch's rows name
every broker and directory with values other than nothing, and its row-to-row events compare with the empty
state's); otherwise the start image is the state after the batch before (a range of the parallel replay), whose
rows the ranges before wrote, so the step goes on from its values and the ranges' rows join as they are.

This is the pure twin; ``metalog.analysis.domain.compiled.step`` is the compiled one (same interface, same rows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from metalog.analysis.domain.columns import Chunk, Coded, ColumnData, Ints, ints
from metalog.analysis.domain.schema import (
    BROKER_STATES,
    BROKERS,
    DIR_TRANSITIONS,
    DIRECTORIES,
    EVENT_KINDS,
    EVENTS,
    FAILURES,
    PHASES,
    TIMELINE,
)
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.state.delta import MetadataDelta
from metalog.state.enums import ZK_MIGRATION_STATES, metadata_version_name
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration
from metalog.state.loader import AbortedTransaction

NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER
# directory numbers of the placeholders, which are also the directory kinds' (a real directory is kind ASSIGNED)
MIGRATING_DIR, UNASSIGNED_DIR, LOST_DIR, ASSIGNED = 0, 1, 2, 3
ZK_NAMES = tuple(ZK_MIGRATION_STATES[i] for i in range(len(ZK_MIGRATION_STATES)))  # NONE, MIGRATION, ...
PHASE_NATIVE, PHASE_PRE, PHASE_HYBRID, PHASE_DUAL, PHASE_POST = range(5)
NOT_STARTED, IN_PROGRESS, COMPLETE = range(3)
UNREGISTERED, FENCED, UNFENCED = range(3)
PHASE_CHANGE, DIR_TRANSITION, METADATA_VERSION, DIRECTORY_FAILURE, ABORTED, CONTROLLER_LEADER = range(6)
BROKER_ZERO = (UNREGISTERED, 0, 0, 0, 0, 0, 0, 0, 0, 0)  # a broker nothing names (before its first row)
DIRECTORY_ZERO = (0, 0, 0, 0, 0)


def phase(zk_state: int, brokers_zk: int) -> int:
    """The migration phase's code (PHASES) from ZkMigrationState's id and the ZooKeeper brokers left."""
    if zk_state == 2:  # PRE_MIGRATION
        return PHASE_PRE
    if zk_state == 1:  # MIGRATION
        return PHASE_HYBRID if brokers_zk else PHASE_DUAL
    if zk_state == 3:  # POST_MIGRATION
        return PHASE_POST
    return PHASE_NATIVE


def dir_transition(with_dirs: int, registered: int, migrating: int, unassigned: int) -> int:
    """KIP-858's transition (DIR_TRANSITIONS): not started while no registered broker lists log directories,
    complete when every one does and no replica is MIGRATING or UNASSIGNED."""
    if not with_dirs:
        return NOT_STARTED
    if with_dirs == registered and not migrating and not unassigned:
        return COMPLETE
    return IN_PROGRESS


def _version(level: int) -> str:
    return (metadata_version_name(level) or "") if level else ""


def version_names(codes: Ints) -> list[str]:
    """The vocabulary of a metadata_version column: its code is the level, 0 unset (an empty cell)."""
    return [_version(level) for level in range(max(codes, default=0) + 1)]


class ClusterStep:
    """One cluster's per-batch step (see the module's docstring). ``image``: the state before the first batch;
    ``image_of``: the loader's published image, built when asked (a directory failure lists the partitions on
    the directory, a rare event)."""

    def __init__(self, cluster: str, image: MetadataImage, image_of: Callable[[], MetadataImage], *,
                 log_start: bool = True) -> None:
        self.cluster = cluster
        self._image_of = image_of
        # brokers by number: id, registration, replicas per directory kind (4 a broker), leaders, offline replicas,
        # and its (broker, directory) pairs
        self._bnum: dict[int, int] = {}
        self._bid: list[int] = []
        self._reg: list[BrokerRegistration | None] = []
        self._bkind: list[int] = []
        self._blead: list[int] = []
        self._boff: list[int] = []
        self._bpairs: list[list[int]] = []
        # directories by number (the placeholders first): id and its text
        self._dnum: dict[Uuid, int] = {}
        self._dir: list[Uuid] = []
        self._dname: list[str] = []
        for d in (MIGRATING, UNASSIGNED, LOST):
            self._directory(d)
        # (broker, directory) pairs by number: broker, directory, replicas, leaders, partitions without a leader
        self._pnum: dict[int, int] = {}
        self._pb: list[int] = []
        self._pd: list[int] = []
        self._prep: list[int] = []
        self._plead: list[int] = []
        self._pless: list[int] = []
        self._zero_counts()
        self._dirty_b: set[int] = set()
        self._dirty_p: set[int] = set()
        self._shown_b: dict[int, tuple[int, ...]] = {}  # the values of each broker's last row (none: zero)
        self._shown_p: dict[int, tuple[int, ...]] = {}
        self._lost: list[tuple[int, Uuid]] = []  # (broker, directory) that failed since the last batch
        self._told: list[tuple[int, int, str]] = []  # (offset, event, detail) told since the last batch
        self._count(image)
        self._prev: tuple[int, int, int] | None = None  # (metadata.version, phase, transition) of the row before
        if log_start:
            self._dirty_b.update(range(len(self._bid)))
            self._dirty_p.update(range(len(self._pb)))
        else:
            self._prev = self._codes()
            for b in range(len(self._bid)):
                self._remember(self._shown_b, b, self._broker_values(b), BROKER_ZERO)
            for p in range(len(self._pb)):
                if self._pd[p] > LOST_DIR:
                    self._remember(self._shown_p, p, self._pair_values(p), DIRECTORY_ZERO)
        self._new_rows()

    # ---- the counts ---------------------------------------------------------------------------------------------
    def _zero_counts(self) -> None:
        self.metadata_version = 0  # the level, 0 unset
        self.zk_state = 0
        self.topics = self.partitions = self.offline_partitions = self.imbalance = 0
        self.kinds = [0, 0, 0, 0]  # replicas migrating, unassigned, lost, assigned
        self.offline = 0
        self.fenced = self.registered = self.shutdown = self.brokers_zk = self.with_dirs = 0
        for counts in (self._bkind, self._blead, self._boff, self._prep, self._plead, self._pless):
            counts[:] = [0] * len(counts)
        self._reg[:] = [None] * len(self._reg)

    def _count(self, image: MetadataImage) -> None:
        """Every count from ``image`` (the start, or a state replaced whole)."""
        self.metadata_version = image.features.metadata_version or 0
        self.zk_state = image.features.zk_migration_state
        for bid, reg in image.brokers.items():
            self._broker_change(bid, None, reg)
        self.topics = len(image.topics)
        for topic in image.topics.values():
            for part in topic.partitions.values():
                self._partition(part, 1)

    def published(self, delta: MetadataDelta | None, image: MetadataImage | None) -> None:
        """``MetadataLoader.on_publish`` of a loader with ``images=False``: the delta, over the state it changes
        (``delta.image``); or None and the state replaced whole."""
        if delta is None:
            assert image is not None
            self._replace(image)
            return
        before = delta.image
        self.metadata_version = delta.metadata_version or 0
        self.zk_state = delta.zk_migration_state
        self._deleted_topics(delta, before)
        added = self._changed_topics(delta, before)
        self._changed_brokers(delta, before)
        for part in added:  # after the brokers: a partition counts against the brokers as they are now
            self._partition(part, 1)

    def _deleted_topics(self, delta: MetadataDelta, before: MetadataImage) -> None:
        """A deleted topic's partitions leave the counts as they were."""
        for tid in delta.deleted_topics:
            gone = before.topics.get(tid)
            if gone is not None:
                self.topics -= 1
                for part in gone.partitions.values():
                    self._partition(part, -1)

    def _changed_topics(self, delta: MetadataDelta, before: MetadataImage) -> list[PartitionRegistration]:
        """A changed partition leaves the counts as it was (an ISR-only change leaves them alone); returns the
        partitions to count as they are now (a new topic's, or one removed and created again, all of them)."""
        added: list[PartitionRegistration] = []
        old_topics = before.topics
        for tid, topic in delta.topics.items():
            if topic.base is None:  # new, or removed and created again
                gone = old_topics.get(tid)
                if gone is None:
                    self.topics += 1
                else:
                    for part in gone.partitions.values():
                        self._partition(part, -1)
                added += topic.partitions.values()
                continue
            base = topic.base_partitions
            for pid, new in topic.partitions.items():
                old = base.get(pid)
                if old is not None:
                    if old.leader == new.leader and old.replicas == new.replicas and \
                            old.directories == new.directories:
                        continue  # an ISR change: the same counts
                    self._partition(old, -1)
                added.append(new)
        return added

    def _changed_brokers(self, delta: MetadataDelta, before: MetadataImage) -> None:
        old_brokers = before.brokers
        for bid, reg in delta.brokers.items():
            old_reg = old_brokers.get(bid)
            if old_reg is not reg:
                self._broker_change(bid, old_reg, reg)

    def _replace(self, image: MetadataImage) -> None:
        """The state replaced whole: every count anew; every broker and directory known is looked at again."""
        for b, reg in enumerate(self._reg):  # directory failures, as between any two states
            new = image.brokers.get(self._bid[b])
            if reg is not None and new is not None:
                self._lost_directories(reg, new)
        self._zero_counts()
        self._count(image)
        self._dirty_b.update(range(len(self._bid)))
        self._dirty_p.update(range(len(self._pb)))

    def _broker(self, bid: int) -> int:
        b = self._bnum.get(bid)
        if b is None:
            b = self._bnum[bid] = len(self._bid)
            self._bid.append(bid)
            self._reg.append(None)
            self._bkind += [0, 0, 0, 0]
            self._blead.append(0)
            self._boff.append(0)
            self._bpairs.append([])
        return b

    def _directory(self, directory: Uuid) -> int:
        d = self._dnum.get(directory)
        if d is None:
            d = self._dnum[directory] = len(self._dir)
            self._dir.append(directory)
            self._dname.append(str(directory))
        return d

    def _pair(self, b: int, d: int) -> int:
        key = b << 32 | d
        p = self._pnum.get(key)
        if p is None:
            p = self._pnum[key] = len(self._pb)
            self._pb.append(b)
            self._pd.append(d)
            self._prep.append(0)
            self._plead.append(0)
            self._pless.append(0)
            self._bpairs[b].append(p)
        return p

    def _offline(self, reg: BrokerRegistration | None, d: int) -> bool:
        """``state.image.offline_replicas``' rule for a replica of a broker on directory number ``d``."""
        if reg is None or reg.fenced:
            return True
        if d < LOST_DIR:  # MIGRATING and UNASSIGNED count as online (Kafka's DirectoryId.isOnline)
            return False
        if d == LOST_DIR:
            return True
        return bool(reg.directories) and self._dir[d] not in reg.directories

    def _partition(self, part: PartitionRegistration, sign: int) -> None:
        """One partition into the counts (``sign`` 1) or out of them (-1)."""
        leader, replicas = part.leader, part.replicas
        self.partitions += sign
        leaderless = leader == NO_LEADER
        if leaderless:
            self.offline_partitions += sign
        if leader != (replicas[0] if replicas else NO_LEADER):
            self.imbalance += sign
        kinds, dirty_b, dirty_p = self.kinds, self._dirty_b, self._dirty_p
        for replica, directory in zip(replicas, part.directories, strict=True):
            b = self._broker(replica)
            d = self._directory(directory)
            p = self._pair(b, d)
            kind = d if d < ASSIGNED else ASSIGNED
            self._prep[p] += sign
            self._bkind[4 * b + kind] += sign
            kinds[kind] += sign
            if replica == leader:
                self._plead[p] += sign
                self._blead[b] += sign
            if leaderless:
                self._pless[p] += sign
            if self._offline(self._reg[b], d):
                self._boff[b] += sign
                self.offline += sign
            dirty_b.add(b)
            dirty_p.add(p)

    def _broker_change(self, bid: int, old: BrokerRegistration | None, new: BrokerRegistration | None) -> None:
        """A broker registered, changed or gone (ControllerMetricsChanges.handleBrokerChange): its counts, and its
        replicas' offline state counted anew from its replicas per directory."""
        b = self._broker(bid)
        for reg, sign in ((old, -1), (new, 1)):
            if reg is not None:
                self.registered += sign
                self.fenced += sign * reg.fenced
                self.shutdown += sign * reg.in_controlled_shutdown
                self.brokers_zk += sign * reg.is_migrating_zk_broker
                self.with_dirs += sign * bool(reg.directories)
                for directory in reg.directories:  # listed directories have rows, replicas or not
                    self._pair(b, self._directory(directory))
        self._reg[b] = new
        offline = sum(self._prep[p] for p in self._bpairs[b] if self._prep[p] and self._offline(new, self._pd[p]))
        self.offline += offline - self._boff[b]
        self._boff[b] = offline
        self._dirty_b.add(b)
        self._dirty_p.update(self._bpairs[b])
        if old is not None and new is not None:
            self._lost_directories(old, new)

    def _lost_directories(self, old: BrokerRegistration, new: BrokerRegistration) -> None:
        """Directories a broker stopped listing without registering again (the same epoch): Kafka's controller
        takes them offline (ReplicationControlManager.handleDirectoriesOffline)."""
        if old is not new and old.epoch == new.epoch:
            self._lost += [(new.id, d) for d in old.directories if d not in new.directories]

    # ---- events told as they come -----------------------------------------------------------------------------
    def aborted(self, abort: AbortedTransaction) -> None:
        """``MetadataLoader.on_abort``."""
        self._told.append((abort.abort_offset, ABORTED,
                           f"transaction begun at offset {abort.begin_offset} aborted"))

    def leader_change(self, offset: int, leader_id: int, epoch: int) -> None:
        """A LeaderChangeMessage in the control batch ending at ``offset`` (its epoch: the batch's
        partitionLeaderEpoch)."""
        self._told.append((offset, CONTROLLER_LEADER, f"controller {leader_id} leads in epoch {epoch}"))

    # ---- rows ---------------------------------------------------------------------------------------------------
    def _codes(self) -> tuple[int, int, int]:
        kinds = self.kinds
        return (self.metadata_version, phase(self.zk_state, self.brokers_zk),
                dir_transition(self.with_dirs, self.registered, kinds[0], kinds[1]))

    def batch(self, last_offset: int, timestamp: int, open_transaction: bool) -> None:
        """The rows of the batch ending at ``last_offset`` (max timestamp ``timestamp``), from the state published
        after it (or, inside an open transaction, before it)."""
        mv, ph, tr = codes = self._codes()
        kinds = self.kinds
        self._timeline.append((last_offset, timestamp, mv, self.zk_state, ph, tr, self.fenced,
                               self.registered - self.fenced, self.shutdown, self.brokers_zk, self.topics,
                               self.partitions, self.offline_partitions, self.imbalance, kinds[0], kinds[1],
                               kinds[2], kinds[3], self.offline, int(open_transaction)))
        events = self._events
        if self._told:
            events += [(offset, timestamp, kind, detail) for offset, kind, detail in self._told]
            self._told.clear()
        if self._lost:
            self._failures(last_offset, timestamp)
        prev = self._prev or (0, PHASE_NATIVE, NOT_STARTED)  # (the log's start: the empty state's)
        if codes != prev:
            if prev[0] != mv:
                events.append((last_offset, timestamp, METADATA_VERSION,
                               f"{_version(prev[0]) or 'unset'} -> {_version(mv) or 'unset'}"))
            if prev[1] != ph:
                events.append((last_offset, timestamp, PHASE_CHANGE, f"{PHASES[prev[1]]} -> {PHASES[ph]}"))
            if prev[2] != tr:
                events.append((last_offset, timestamp, DIR_TRANSITION,
                               f"{DIR_TRANSITIONS[prev[2]]} -> {DIR_TRANSITIONS[tr]}"))
        self._prev = codes
        if self._dirty_b or self._dirty_p:
            self._changed_rows(last_offset, timestamp)

    def _failures(self, last_offset: int, timestamp: int) -> None:
        """The directory-failure events of the directories lost in the batch, and what each held (the partitions
        with a replica on it, from the published image: a rare event)."""
        image = self._image_of()
        for bid, directory in self._lost:
            self._events.append((last_offset, timestamp, DIRECTORY_FAILURE, f"broker {bid} lost directory {directory}"))
            found = sorted((topic.name, pid, part.leader) for topic in image.topics.values()
                           for pid, part in topic.partitions.items()
                           if bid in part.replicas and part.directory(bid) == directory)
            d = self._directory(directory)
            for topic_name, pid, leader in found or [("", -1, NO_LEADER)]:  # a directory that held none: one row
                self._failed.append((last_offset, timestamp, bid, d, topic_name, pid, leader))
        self._lost.clear()

    def _broker_values(self, b: int) -> tuple[int, ...]:
        reg, k = self._reg[b], 4 * b
        kinds = self._bkind[k:k + 4]
        if reg is None:
            return (UNREGISTERED, 0, 0, 0, *kinds, self._boff[b], self._blead[b])
        return (FENCED if reg.fenced else UNFENCED, int(reg.in_controlled_shutdown), int(reg.is_migrating_zk_broker),
                len(reg.directories), *kinds, self._boff[b], self._blead[b])

    def _pair_values(self, p: int) -> tuple[int, ...]:
        """A real directory's values: online (its broker registered and the directory online on it, fenced or
        not), replicas, leaders, offline replicas, partitions without a leader; none while neither its broker
        lists it nor a replica is on it."""
        reg, d, replicas = self._reg[self._pb[p]], self._pd[p], self._prep[p]
        listed = reg is not None and self._dir[d] in reg.directories
        if not replicas and not listed:
            return DIRECTORY_ZERO
        online = listed or (reg is not None and not reg.directories)
        return (int(online), replicas, self._plead[p], replicas if self._offline(reg, d) else 0, self._pless[p])

    @staticmethod
    def _remember(shown: dict[int, tuple[int, ...]], key: int, values: tuple[int, ...],
                  zero: tuple[int, ...]) -> None:
        if values == zero:
            shown.pop(key, None)
        else:
            shown[key] = values

    def _changed_rows(self, last_offset: int, timestamp: int) -> None:
        """A row for each broker and each real directory whose values changed, by broker id (then directory id)."""
        bid = self._bid
        for b in sorted(self._dirty_b, key=bid.__getitem__):
            values = self._broker_values(b)
            if values != self._shown_b.get(b, BROKER_ZERO):
                self._brokers.append((last_offset, timestamp, bid[b], *values))
                self._remember(self._shown_b, b, values, BROKER_ZERO)
        self._dirty_b.clear()
        pb, pd, name = self._pb, self._pd, self._dname
        for p in sorted((p for p in self._dirty_p if pd[p] > LOST_DIR), key=lambda p: (bid[pb[p]], name[pd[p]])):
            values = self._pair_values(p)
            if values != self._shown_p.get(p, DIRECTORY_ZERO):
                self._directories.append((last_offset, timestamp, bid[pb[p]], pd[p], *values))
                self._remember(self._shown_p, p, values, DIRECTORY_ZERO)
        self._dirty_p.clear()

    # ---- handing the rows over ----------------------------------------------------------------------------------
    def _new_rows(self) -> None:
        self._timeline: list[tuple[int, ...]] = []
        self._brokers: list[tuple[int, ...]] = []
        self._directories: list[tuple[int, ...]] = []
        self._failed: list[tuple[Any, ...]] = []
        self._events: list[tuple[int, int, int, str]] = []

    @property
    def pending(self) -> int:
        """Timeline rows since the last ``take``."""
        return len(self._timeline)

    def take(self) -> dict[str, Chunk]:
        """The rows since the last ``take``, a chunk per table (timeline_batches, events, broker_timeline,
        directory_timeline, directory_failures), and none held any more."""
        timeline, brokers, directories, failed, events = (self._timeline, self._brokers, self._directories,
                                                           self._failed, self._events)
        self._new_rows()
        return {
            TIMELINE.name: _timeline_chunk(self.cluster, timeline),
            EVENTS.name: _chunk(EVENTS, self.cluster, events, {2: EVENT_KINDS}),
            BROKERS.name: _chunk(BROKERS, self.cluster, brokers, {3: BROKER_STATES}),
            DIRECTORIES.name: _chunk(DIRECTORIES, self.cluster, directories, {3: self._dname}),
            FAILURES.name: _chunk(FAILURES, self.cluster, failed, {3: self._dname}),
        }


def _timeline_chunk(cluster: str, rows: list[tuple[int, ...]]) -> Chunk:
    arrays = [ints(c) for c in zip(*rows, strict=True)] if rows else [ints() for _ in TIMELINE.values]
    columns: list[ColumnData] = [*arrays[:2], Coded(arrays[2], version_names(arrays[2])), Coded(arrays[3], ZK_NAMES),
                                 Coded(arrays[4], PHASES), Coded(arrays[5], DIR_TRANSITIONS), *arrays[6:]]
    return Chunk(TIMELINE, cluster, tuple(columns))


def _chunk(table: Any, cluster: str, rows: list[tuple[Any, ...]], coded: dict[int, Any]) -> Chunk:
    """Rows as columns: ints as arrays, text as codes (``coded``: column index -> vocabulary) or str."""
    columns: list[Any] = []
    by_column = list(zip(*rows, strict=True)) if rows else [() for _ in table.values]
    for i, (column, values) in enumerate(zip(table.values, by_column, strict=True)):
        if i in coded:
            columns.append(Coded(ints(values), coded[i]))
        elif column.kind.value == "text":
            columns.append(list(values))
        else:
            columns.append(ints(values))
    return Chunk(table, cluster, tuple(columns))
