"""How a cluster's metadata grows, and which controller led when: one pass of its own over a log directory, apart
from the per-batch replay (no state is built, nothing is decoded but the records' frames).

- ``growth``: per minute of log time (the batches' maxTimestamp, floored to the minute) and record type, the
  records and their value bytes. A data record's type is the apiKey at the start of its value frame, named as
  Kafka names the message (``PartitionChangeRecord``); a control record's, its key's ControlRecordType, named
  by its message (``LeaderChangeMessage``, ``VotersRecord``, ...).
- ``log_size``: per minute, the batches appended and their bytes on disk (headers included), and the log's bytes
  from its start offset up to the end of that minute.
- ``snapshots``: every ``*.checkpoint`` in the directory, read whole: its end offset and epoch (its name), its
  data records, its bytes, and its time, the SnapshotHeaderRecord's lastContainedLogTimestamp: the log time of
  the last batch it holds (a file's mtime is not log time: a copied directory has the copy's).
- ``controller_leadership``: every epoch's start, from ``metalog quorum history``'s reading of the control
  batches (``replay.quorum.quorum_history``): the LeaderChangeMessage that opened it, or the first batch of an
  epoch whose LeaderChangeMessage is not in the log (its leader unknown, -1).

Memory is a counter per minute and type, whatever the log's size. Every batch is read as every reader reads it
(frame, CRC, chain, KRaft's rules for its records): damage is the error ``log verify`` names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from metalog.analysis.outputs.tables import bucket_start
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.framing import metadata_api_key
from metalog.errors import DecodeError, LogError
from metalog.log import MetadataLog
from metalog.log.batch import RecordBatch
from metalog.log.control import MESSAGES, ControlType, parse_control_key
from metalog.replay.quorum import QuorumEvent, quorum_history
from metalog.snapshots import SnapshotReader

MINUTE_MS = 60_000
LEADERSHIP_KINDS = ("election", "epoch")  # quorum history's events that start an epoch
_CONTROL = 1 << 16  # a control record's type among the data records' apiKeys: _CONTROL + its ControlRecordType


@dataclass(frozen=True)
class TypeMinute:
    """``growth``: the records of one type whose batches are stamped within one minute."""

    minute: int  # epoch ms, a multiple of 60,000
    record_type: str
    records: int
    bytes: int  # the records' values (the metadata record frames), not their batches' headers


@dataclass(frozen=True)
class LogMinute:
    """``log_size``: the batches stamped within one minute, and the log's bytes up to the end of it."""

    minute: int
    batches: int
    batch_bytes: int  # the batches' sizes on disk
    log_bytes: int  # every batch of the log from its start offset stamped before the minute ends


@dataclass(frozen=True)
class Snapshot:
    """``snapshots``: a snapshot file of the directory."""

    end_offset: int
    epoch: int
    timestamp: int  # SnapshotHeaderRecord.lastContainedLogTimestamp
    records: int  # its data records: the state at its end offset
    bytes: int
    file: str


@dataclass(frozen=True)
class Leadership:
    """``controller_leadership``: the start of an epoch, as ``quorum history`` shows it."""

    offset: int
    timestamp: int
    epoch: int
    leader: int  # -1: unknown (the epoch's LeaderChangeMessage is not in the log)
    voters: str  # the voter ids, comma-separated
    granting_voters: str
    record: str  # LEADER_CHANGE@offset, or - for an epoch no LeaderChangeMessage announced


@dataclass
class ClusterGrowth:
    """One cluster's rows of the four tables, in time order (leadership: log order)."""

    name: str
    growth: list[TypeMinute] = field(default_factory=list)
    log_size: list[LogMinute] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    leadership: list[Leadership] = field(default_factory=list)

    def table(self, name: str) -> list[Any]:
        """The rows of the table ``name`` (``ROW_TYPES``)."""
        tables: dict[str, list[Any]] = {"growth": self.growth, "log_size": self.log_size,
                                        "snapshots": self.snapshots, "controller_leadership": self.leadership}
        return tables[name]


# each table's row type: its fields are the table's columns after the cluster, in order
ROW_TYPES: dict[str, type[Any]] = {"growth": TypeMinute, "log_size": LogMinute, "snapshots": Snapshot,
                                   "controller_leadership": Leadership}


def record_type_name(type_key: int) -> str:
    """Kafka's name of a record type: a metadata record's apiKey, or ``_CONTROL`` + a ControlRecordType."""
    if type_key >= _CONTROL:
        control = ControlType(type_key - _CONTROL)
        return MESSAGES.get(control, control.name)
    spec = METADATA_BY_API_KEY.get(type_key)
    return spec.name if spec is not None else f"apiKey {type_key}"


def read_growth(path: str | os.PathLike[str], name: str) -> ClusterGrowth:
    """The four tables of the log directory ``path``, for the cluster ``name``."""
    with MetadataLog.open(path) as log:
        out = ClusterGrowth(name)
        out.growth, out.log_size = _minutes(log)
        out.snapshots = list(_snapshots(log))
        out.leadership = [leadership(e) for e in quorum_history(log) if e.kind in LEADERSHIP_KINDS]
    return out


def leadership(event: QuorumEvent) -> Leadership:
    """A quorum history event that starts an epoch, as a row."""
    assert event.timestamp is not None  # (only a snapshot's event may lack one)
    return Leadership(event.offset, event.timestamp, event.epoch, event.leader_id,
                      ",".join(str(v.replica_id) for v in event.voters),
                      ",".join(map(str, event.granting_voters)), event.record)


def _minutes(log: MetadataLog) -> tuple[list[TypeMinute], list[LogMinute]]:
    by_type: dict[tuple[int, int], list[int]] = {}  # (minute, type key) -> [records, bytes]
    by_minute: dict[int, list[int]] = {}  # minute -> [batches, bytes]
    start = log.log_start_offset
    minute, after, sizes, counts_of = 1, 0, [0, 0], _TypeCounts(by_type)  # (no batch is in [1, 0))
    for batch in log.batches(start):
        timestamp = batch.max_timestamp
        if not minute <= timestamp < after:  # another minute (batches come a minute at a time)
            minute = bucket_start(timestamp, MINUTE_MS)
            after = (minute // MINUTE_MS + 1) * MINUTE_MS  # (the first minute of int64 is cut short)
            sizes = by_minute.setdefault(minute, [0, 0])
            counts_of = _TypeCounts(by_type, minute)
        sizes[0] += 1
        sizes[1] += batch.size_in_bytes
        if batch.is_control or batch.base_offset < start:
            for type_key, value_bytes in _record_types(batch, start):
                counts_of.add(type_key, value_bytes)
            continue
        for record in batch.records():
            value = record.value
            api_key = metadata_api_key(value)
            if api_key is None:
                raise _not_a_frame(record.offset, batch)
            counts_of.add(api_key, len(value) if value is not None else 0)
    growth = [TypeMinute(minute, name, records, size) for (minute, name), (records, size) in
              sorted(((m, record_type_name(k)), c) for (m, k), c in by_type.items())]
    log_size, total = [], 0
    for minute, (batches, size) in sorted(by_minute.items()):
        total += size
        log_size.append(LogMinute(minute, batches, size, total))
    return growth, log_size


class _TypeCounts:
    """One minute's [records, bytes] by record type, in ``by_type`` (keyed (minute, type key)), each found once."""

    def __init__(self, by_type: dict[tuple[int, int], list[int]], minute: int = 0) -> None:
        self.by_type, self.minute = by_type, minute
        self.mine: dict[int, list[int]] = {}

    def add(self, type_key: int, value_bytes: int) -> None:
        counts = self.mine.get(type_key)
        if counts is None:
            counts = self.mine[type_key] = self.by_type.setdefault((self.minute, type_key), [0, 0])
        counts[0] += 1
        counts[1] += value_bytes


def _not_a_frame(offset: int, batch: RecordBatch) -> LogError:
    return LogError(f"offset {offset}: the record's value is not a metadata record frame (frame version 1, apiKey, "
                    "version)", file=batch.source)


def _record_types(batch: RecordBatch, start: int) -> Iterator[tuple[int, int]]:
    """(type key, value bytes) of each record of ``batch`` from offset ``start`` on."""
    control = batch.is_control
    for record in batch.records():
        if record.offset < start:
            continue
        value = record.value
        size = 0 if value is None else len(value)
        if control:
            try:
                yield _CONTROL + parse_control_key(record.key), size
            except DecodeError as e:
                raise LogError(f"offset {record.offset}: control record: {e}", file=batch.source) from None
            continue
        api_key = metadata_api_key(value)
        if api_key is None:
            raise _not_a_frame(record.offset, batch)
        yield api_key, size


def _snapshots(log: MetadataLog) -> Iterator[Snapshot]:
    """Each snapshot read whole, as ``log verify`` reads it (its damage is the error verify names)."""
    for snapshot in log.snapshot_ids():
        found = SnapshotReader(log.directory / snapshot.file_name).verify()
        yield Snapshot(snapshot.end_offset, snapshot.epoch, found.last_contained_log_timestamp, found.records,
                       found.size_in_bytes, snapshot.file_name)
