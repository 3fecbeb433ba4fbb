"""The KRaft quorum as a metadata log directory knows it, offline: what ``kafka-metadata-quorum describe`` asks a
live controller, answered from the files.

- Elections: each leader writes a LeaderChangeMessage as the first batch of its epoch (Kafka's
  ``LeaderState.appendStartOfEpochControlRecords``): the leader, the voters and the voters that granted it, in a
  control batch whose partitionLeaderEpoch is the new epoch.
- The voter set: at kraft.version 1 (KIP-853) the VotersRecord control records, in the log and in the header of
  a snapshot (the set in force at the snapshot's last offset); at kraft.version 0 the voters are static
  (``controller.quorum.voters``, not in the log), and the LeaderChangeMessage of each election names their ids.
- kraft.version: the KRaftVersionRecord control records (0 without one), as Kafka's
  ``KRaftControlRecordStateMachine`` tracks them.
- ``quorum-state``: the node's own election state (FileQuorumStateStore), read as it is.

The log has no high watermark of its own (Kafka keeps it in memory): ``QuorumDescription.snapshot_end_offset``
is what the files prove, since Kafka takes a snapshot only below the high watermark
(``KafkaMetadataLog.createNewSnapshot``). Control batches are found by the same checked scan every reader uses,
and read in full only where the scan found one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalog.codec.uuid import Uuid
from metalog.errors import DecodeError, LogError
from metalog.log import MetadataLog
from metalog.log.batch import RecordBatch
from metalog.log.control import ControlRecord, ControlType, decode_control
from metalog.log.snapshot_files import SnapshotId
from metalog.replay.points import format_time
from metalog.snapshots import SnapshotReader

NO_LEADER = -1  # Kafka's DescribeQuorum: the leader is unknown
BatchMark = tuple[int, int, bool]  # a batch's (base offset, max timestamp, is control), as the log's scan reads it
_ZERO = Uuid()


@dataclass(frozen=True)
class Voter:
    """A voter: its id, its directory id (None where the records do not say) and its endpoints
    (``NAME://host:port``, from a VotersRecord)."""

    replica_id: int
    directory_id: Uuid | None = None
    endpoints: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """DescribeQuorum's names (ReplicaState, and Nodes' listeners as endpoints)."""
        return {"replicaId": self.replica_id,
                "replicaDirectoryId": None if self.directory_id is None else str(self.directory_id),
                "endpoints": list(self.endpoints)}


@dataclass(frozen=True)
class QuorumEvent:
    """One row of the quorum's history: what happened at ``offset`` and the quorum after it."""

    kind: str  # "election", "voters", "kraft.version", "epoch" (an epoch whose LeaderChange is not in the log),
    # "snapshot" (the voters and kraft.version of the snapshot the log starts after)
    offset: int
    timestamp: int | None
    epoch: int  # the leader epoch after it
    leader_id: int  # the leader after it (NO_LEADER: unknown)
    voters: tuple[Voter, ...]  # the voter set after it
    kraft_version: int
    record: str  # the control record: LEADER_CHANGE@0, KRAFT_VOTERS@12, ...; for a snapshot, its file name
    granting_voters: tuple[int, ...] = ()  # an election's: the voters that granted the leader their vote
    detail: str = ""  # what changed, in a few words

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offset": self.offset, "time": format_time(self.timestamp),
                               "timestamp": self.timestamp, "event": self.kind, "leaderId": self.leader_id,
                               "leaderEpoch": self.epoch, "voters": [v.to_json() for v in self.voters],
                               "kraftVersion": self.kraft_version, "record": self.record}
        if self.kind == "election":
            out["grantingVoters"] = list(self.granting_voters)
        return out


@dataclass(frozen=True)
class QuorumDescription:
    """``quorum describe``: the quorum at the end of the log, and what the directory's files say."""

    cluster_id: str | None  # meta.properties
    node_id: str | None
    directory_id: str | None
    leader_id: int
    leader_epoch: int
    leader_since: QuorumEvent | None  # the election that made ``leader_id`` leader
    voters: tuple[Voter, ...]
    voters_from: QuorumEvent | None  # the record the voter set comes from
    kraft_version: int
    log_start_offset: int
    log_end_offset: int  # the offset the next record gets
    last_batch_time: int | None
    snapshot_end_offset: int | None  # the latest snapshot's end: every offset below it was committed
    snapshot: str | None  # its file name
    quorum_state: dict[str, Any] | None  # the quorum-state file's fields (None: no file)
    notes: tuple[str, ...] = ()  # where the files disagree or say less than a live quorum would

    def to_json(self) -> dict[str, Any]:
        since = self.leader_since
        return {
            "clusterId": self.cluster_id, "nodeId": self.node_id, "directoryId": self.directory_id,
            "leaderId": self.leader_id, "leaderEpoch": self.leader_epoch,
            "leaderSince": None if since is None else {"offset": since.offset, "time": format_time(since.timestamp),
                                                       "timestamp": since.timestamp},
            "highWatermark": None, "snapshotEndOffset": self.snapshot_end_offset, "snapshot": self.snapshot,
            "logStartOffset": self.log_start_offset, "logEndOffset": self.log_end_offset,
            "kraftVersion": self.kraft_version, "voters": [v.to_json() for v in self.voters],
            "votersFrom": None if self.voters_from is None else {"offset": self.voters_from.offset,
                                                                 "record": self.voters_from.record},
            "quorumState": self.quorum_state, "notes": list(self.notes),
        }


@dataclass
class _Quorum:
    """The quorum as the records read so far leave it."""

    epoch: int = -1
    leader_id: int = NO_LEADER
    voters: tuple[Voter, ...] = ()
    kraft_version: int = 0
    leader_since: QuorumEvent | None = None
    voters_from: QuorumEvent | None = None
    last_base: int | None = None  # the base offset of the last batch read
    last_time: int | None = None  # and its max timestamp


def quorum_history(log: MetadataLog, batches: Iterable[BatchMark] | None = None) -> Iterator[QuorumEvent]:
    """Every election, voter-set change and kraft.version change of the log, in log order; first the snapshot
    the log starts after, where retention moved its start past offset 0. ``batches``: the (base offset, max
    timestamp, is control) of the log's first batch from its start offset and of each of its control batches, in
    log order, where a reader has scanned the log already (the analysis' growth pass); by default the log is
    scanned here."""
    yield from _walk(log, _Quorum(), batches)


def describe_quorum(log: MetadataLog) -> QuorumDescription:
    """The quorum at the end of the log, and the directory's meta.properties, quorum-state and snapshots."""
    q = _Quorum()
    for _ in _walk(log, q):
        pass
    notes = []
    leader_id, leader_since, epoch = q.leader_id, q.leader_since, q.epoch
    latest_epoch = -1 if q.last_base is None else _epoch_of(log, q.last_base)
    if latest_epoch > epoch:  # a later epoch whose LeaderChange is not in the log (none in Kafka's logs)
        epoch, leader_id, leader_since = latest_epoch, NO_LEADER, None
    if leader_since is None and epoch >= 0:
        notes.append(f"epoch {epoch}'s LeaderChange is not in the log (it began before the log's first offset "
                     f"{log.log_start_offset}, or its writer wrote none): the leader is unknown")
    props = log.meta_properties()
    state = _quorum_state(log)
    if state is not None and isinstance(state.get("leaderEpoch"), int) and state["leaderEpoch"] > max(epoch, 0):
        notes.append(f"quorum-state is at epoch {state['leaderEpoch']}, later than the log's {epoch}: an election "
                     "this node saw whose leader's first batch is not in its log")
    latest = log.latest_snapshot_id()
    return QuorumDescription(
        cluster_id=props.get("cluster.id"), node_id=props.get("node.id"), directory_id=props.get("directory.id"),
        leader_id=leader_id, leader_epoch=epoch, leader_since=leader_since, voters=q.voters,
        voters_from=q.voters_from, kraft_version=q.kraft_version, log_start_offset=log.log_start_offset,
        log_end_offset=log.log_end_offset, last_batch_time=q.last_time,
        snapshot_end_offset=None if latest is None else latest.end_offset,
        snapshot=None if latest is None else latest.file_name, quorum_state=state, notes=tuple(notes))


# ---- reading ----------------------------------------------------------------------------------------------------
def _walk(log: MetadataLog, q: _Quorum, batches: Iterable[BatchMark] | None = None) -> Iterator[QuorumEvent]:
    start = log.log_start_offset
    if start > 0:
        yield from _from_snapshot(log, q, start)
    if batches is None:  # every batch (only the first and the control batches make events)
        batches = ((base, timestamp, control) for base, _, timestamp, control, _ in log.scan(start))
    for base, timestamp, control in batches:
        if control:
            yield from _control_batch(log, q, base, timestamp)
        elif q.last_base is None and (epoch := _epoch_of(log, base)) > q.epoch:
            # the log's first batch is of an epoch whose LeaderChange is not in it (retention took it, or the
            # writer wrote none)
            yield from _unannounced(q, epoch, max(base, start), timestamp)
        q.last_base, q.last_time = base, timestamp


def _epoch_of(log: MetadataLog, base: int) -> int:
    return batch_at(log, base).partition_leader_epoch


def batch_at(log: MetadataLog, base: int) -> RecordBatch:
    """The batch at ``base``, which a scan of the log has read and checked already; the log's first batch may
    begin before the log start offset (retention moved the start inside it)."""
    return next(log.batches(max(base, log.log_start_offset), validate=False))


def _unannounced(q: _Quorum, epoch: int, offset: int, timestamp: int) -> Iterator[QuorumEvent]:
    """A data batch opens an epoch no LeaderChange announced (its LeaderChange went with the log before it)."""
    q.epoch, q.leader_id, q.leader_since = epoch, NO_LEADER, None
    yield QuorumEvent("epoch", offset, timestamp, epoch, NO_LEADER, q.voters, q.kraft_version, "-",
                      detail=f"epoch {epoch} from offset {offset}: its LeaderChange is not in the log, the leader "
                             "is unknown")


def _control_batch(log: MetadataLog, q: _Quorum, base: int, timestamp: int) -> Iterator[QuorumEvent]:
    batch = batch_at(log, base)
    epoch = batch.partition_leader_epoch
    for record in batch.records():
        try:
            c = decode_control(record.key, record.value)
        except DecodeError as e:
            raise LogError(f"offset {record.offset}: control record: {e}", file=batch.source) from None
        event = _apply(q, c, record.offset, timestamp, epoch)
        if event is not None:
            yield event
    if epoch > q.epoch:  # a control batch of a new epoch without a LeaderChange (none in Kafka's logs)
        yield from _unannounced(q, epoch, base, timestamp)


def _apply(q: _Quorum, c: ControlRecord, offset: int, timestamp: int | None, epoch: int) -> QuorumEvent | None:
    if c.type == ControlType.LEADER_CHANGE:
        return _election(q, c.message, offset, timestamp, epoch)
    if c.type == ControlType.KRAFT_VOTERS:
        return _voters(q, voters_of(c.message), offset, timestamp, f"KRAFT_VOTERS@{offset}")
    if c.type == ControlType.KRAFT_VERSION:
        level = c.message.k_raft_version
        if level == q.kraft_version:
            return None
        before, q.kraft_version = q.kraft_version, level
        return QuorumEvent("kraft.version", offset, timestamp, q.epoch, q.leader_id, q.voters, level,
                           f"KRAFT_VERSION@{offset}", detail=f"kraft.version {before} -> {level}")
    return None


def _election(q: _Quorum, message: Any, offset: int, timestamp: int | None, epoch: int) -> QuorumEvent:
    named = tuple(Voter(v.voter_id, _directory(getattr(v, "voter_directory_id", None))) for v in message.voters)
    if q.voters_from is None or q.voters_from.kind == "election":  # no VotersRecord: the LeaderChange names them
        q.voters = named
    granting = tuple(v.voter_id for v in message.granting_voters)
    q.epoch, q.leader_id = epoch, message.leader_id
    votes = ",".join(map(str, granting)) or "none recorded"
    event = QuorumEvent("election", offset, timestamp, epoch, message.leader_id, q.voters, q.kraft_version,
                        f"LEADER_CHANGE@{offset}", granting,
                        detail=f"{message.leader_id} leads epoch {epoch} (votes from {votes})")
    if q.voters_from is None or q.voters_from.kind == "election":
        q.voters_from = event
    q.leader_since = event
    return event


def _voters(q: _Quorum, voters: tuple[Voter, ...], offset: int, timestamp: int | None,
            record: str) -> QuorumEvent | None:
    if q.voters_from is not None and q.voters_from.kind != "election" and voters == q.voters:
        return None  # the same set written again (a leader writes it with its listeners)
    detail = _voters_change(q.voters if q.voters_from is not None else (), voters)
    q.voters = voters
    event = QuorumEvent("voters", offset, timestamp, q.epoch, q.leader_id, voters, q.kraft_version, record,
                        detail=detail)
    q.voters_from = event
    return event


def _voters_change(before: tuple[Voter, ...], after: tuple[Voter, ...]) -> str:
    old, new = {v.replica_id: v for v in before}, {v.replica_id: v for v in after}
    parts = [f"+{i}" for i in new if i not in old] + [f"-{i}" for i in old if i not in new]
    parts += [f"{i} changed" for i in new if i in old and new[i] != old[i] and old[i].directory_id is not None]
    return "voters " + (" ".join(parts) if parts else "set: " + ",".join(str(i) for i in new))


def _from_snapshot(log: MetadataLog, q: _Quorum, start: int) -> Iterator[QuorumEvent]:
    """The header of the snapshot the log starts after: kraft.version and the voters at its last offset."""
    snapshot = next((s for s in reversed(log.snapshot_ids()) if s.end_offset == start), None)
    if snapshot is None:
        return
    path = log.directory / snapshot.file_name
    header = _snapshot_header(path)
    q.epoch = snapshot.epoch  # the epoch of its last offset; who led it is in the LeaderChange before, not here
    timestamp = None
    voters = None
    for c in header:
        if c.type == ControlType.SNAPSHOT_HEADER:
            timestamp = c.message.last_contained_log_timestamp
        elif c.type == ControlType.KRAFT_VERSION:
            q.kraft_version = c.message.k_raft_version
        elif c.type == ControlType.KRAFT_VOTERS:
            voters = voters_of(c.message)
    event = QuorumEvent("snapshot", start - 1, timestamp, q.epoch, q.leader_id, voters or (), q.kraft_version,
                        snapshot.file_name, detail=_snapshot_detail(snapshot, q.kraft_version, voters))
    if voters is not None:
        q.voters, q.voters_from = voters, event
    yield event


def _snapshot_detail(snapshot: SnapshotId, kraft_version: int, voters: tuple[Voter, ...] | None) -> str:
    held = "voters " + ",".join(str(v.replica_id) for v in voters) if voters else "no VotersRecord"
    return f"the log starts after snapshot {snapshot.end_offset}-{snapshot.epoch}: kraft.version {kraft_version}, " \
           f"{held}"


def _snapshot_header(path: Path) -> list[ControlRecord]:
    for _, controls in SnapshotReader(path).batches():
        return controls or []
    return []


def voters_of(record: Any) -> tuple[Voter, ...]:
    """A VotersRecord's voters: ids, directory ids and endpoints (``NAME://host:port``; IPv6 hosts bracketed, as
    Kafka's RaftVoterEndpoint prints them)."""
    return tuple(Voter(v.voter_id, _directory(v.voter_directory_id),
                       tuple(_endpoint(e.name, e.host, e.port) for e in v.endpoints)) for v in record.voters)


def _endpoint(name: str, host: str, port: int) -> str:
    return f"{name}://{f'[{host}]' if ':' in host else host}:{port}"


def _directory(d: Uuid | None) -> Uuid | None:
    return None if d is None or d == _ZERO else d


_QUORUM_STATE_FIELDS = {"clusterId": str, "leaderId": int, "leaderEpoch": int, "votedId": int,
                        "votedDirectoryId": str, "appliedOffset": int, "currentVoters": list, "data_version": int}


def _quorum_state(log: MetadataLog) -> dict[str, Any] | None:
    """quorum-state's known fields, each of the type Kafka writes (anything else in the file is left out)."""
    state = log.quorum_state()
    if state is None:
        return None
    return {k: v for k, v in state.items() if k in _QUORUM_STATE_FIELDS and isinstance(v, _QUORUM_STATE_FIELDS[k])
            and not isinstance(v, bool)}
