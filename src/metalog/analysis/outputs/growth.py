"""How a cluster's metadata grows, and which controller led when: one scan over a log directory (no state is built,
nothing is decoded but the start of the records' frames), counted by ``growth_count`` (compiled where built: the
log's compiled scan hands it values and batch ends in C). The scan is its own (``read_growth``: a pass of its own),
or the per-batch replay's, which a tee hands on to the count as it reads (``count_for``, ``growth_reader``, then
``counted_growth``: the python engine's; the Spark and parallel engines' ranges each count theirs, and their counts
are joined, ``growth_parts``, then ``part_growth``).

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

Memory is a row per minute and type (four int64s while the log is scanned). Every batch is read by the log's scan,
as every reader reads it (frame, CRC, chain, KRaft's rules for its records): damage is the error ``log verify``
names. Only the control batches are read again, for their records' types and the quorum's history.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import accumulate, pairwise
from typing import Any, ClassVar, Self, TypeVar

from metalog.analysis.outputs.growth_count import GrowthCount
from metalog.analysis.outputs.growth_parts import GrowthPart
from metalog.codec import core
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.errors import DecodeError, LogError
from metalog.log import MetadataLog
from metalog.log.control import MESSAGES, ControlType, parse_control_key
from metalog.log.tee import ScanReader
from metalog.replay.quorum import QuorumEvent, batch_at, quorum_history
from metalog.snapshots import SnapshotReader

K = TypeVar("K", bound=Hashable)

MINUTE_MS = 60_000
LEADERSHIP_KINDS = ("election", "epoch")  # quorum history's events that start an epoch
_CONTROL = 1 << 16  # a control record's type among the data records' apiKeys: _CONTROL + its ControlRecordType
ALL_OFFSETS = (1 << 63) - 1  # the scan's last offset: to the log's end
# The counting's compiled twin (``.compiled`` None: the pure GrowthCount runs), in the "analysis" core.
GROWTH_COUNT = core.register_twin("analysis", "metalog.analysis.outputs.compiled.growth_count", "GrowthCount",
                                  GrowthCount)


@dataclass(frozen=True, slots=True)
class TypeMinute:
    """A row of ``growth``: the records of one type whose batches are stamped within one minute."""

    minute: int  # epoch ms, a multiple of 60,000
    record_type: str
    records: int
    bytes: int  # the records' values (the metadata record frames), not their batches' headers


@dataclass(frozen=True, slots=True)
class LogMinute:
    """A row of ``log_size``: the batches stamped within one minute, and the log's bytes up to the end of it."""

    minute: int
    batches: int
    batch_bytes: int  # the batches' sizes on disk
    log_bytes: int  # every batch of the log from its start offset stamped before the minute ends


class Columns:
    """A table's rows kept as columns (a row per minute, tens of thousands of them: no object per row): a
    dataclass whose fields are its row type's (``ROW``), each a column, all of one length. Iterated, its rows."""

    ROW: ClassVar[type[Any]]

    def columns(self) -> dict[str, Sequence[Any]]:
        """The columns by name, in the row type's order."""
        return {f.name: getattr(self, f.name) for f in fields(self.ROW)}

    def __len__(self) -> int:
        return len(getattr(self, fields(self.ROW)[0].name))

    def __iter__(self) -> Iterator[Any]:
        return map(self.ROW, *self.columns().values())

    def sliced(self, start: int | None, stop: int | None = None) -> Self:
        """The rows from ``start`` to ``stop``, as columns."""
        return type(self)(*(column[start:stop] for column in self.columns().values()))

    @classmethod
    def of(cls, rows: Iterable[Any]) -> Self:
        """``rows`` (``ROW``s) as columns, each of its empty column's kind (an int64 array, or a list)."""
        listed = list(rows)
        return cls(*(_like(empty, [getattr(row, name) for row in listed]) for name, empty in cls().columns().items()))


def _ints() -> array[int]:
    return array("q")


def _like(column: Sequence[Any], values: list[Any]) -> Sequence[Any]:
    """``values`` as a column of ``column``'s kind: an int64 array, or a list."""
    return array("q", values) if isinstance(column, array) else values


@dataclass
class TypeMinutes(Columns):
    """``growth``'s rows (``TypeMinute``), in minute order, and by record type's name within a minute."""

    ROW = TypeMinute
    minute: array[int] = field(default_factory=_ints)
    record_type: list[str] = field(default_factory=list)
    records: array[int] = field(default_factory=_ints)
    bytes: array[int] = field(default_factory=_ints)


@dataclass
class LogMinutes(Columns):
    """``log_size``'s rows (``LogMinute``), in minute order."""

    ROW = LogMinute
    minute: array[int] = field(default_factory=_ints)
    batches: array[int] = field(default_factory=_ints)
    batch_bytes: array[int] = field(default_factory=_ints)
    log_bytes: array[int] = field(default_factory=_ints)


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
    """One cluster's rows of the four tables, in time order (leadership: log order); the two with a row per minute
    as columns."""

    name: str
    growth: TypeMinutes = field(default_factory=TypeMinutes)
    log_size: LogMinutes = field(default_factory=LogMinutes)
    snapshots: list[Snapshot] = field(default_factory=list)
    leadership: list[Leadership] = field(default_factory=list)

    def columns(self, table: str) -> dict[str, Sequence[Any]]:
        """The columns of ``table`` (its row type's fields: ``ROW_TYPES``), by name."""
        if table == "growth":
            return self.growth.columns()
        if table == "log_size":
            return self.log_size.columns()
        rows: list[Any] = self.snapshots if table == "snapshots" else self.leadership
        return {f.name: [getattr(row, f.name) for row in rows] for f in fields(ROW_TYPES[table])}

    @classmethod
    def of_rows(cls, name: str, rows: Mapping[str, Iterable[Sequence[Any]]]) -> ClusterGrowth:
        """A cluster's growth from each table's rows (``ROW_TYPES``), each a sequence of its columns' values."""
        made = {table: [kind(*row) for row in rows[table]] for table, kind in ROW_TYPES.items()}
        return cls(name, TypeMinutes.of(made["growth"]), LogMinutes.of(made["log_size"]), made["snapshots"],
                   made["controller_leadership"])


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
    """The four tables of the log directory ``path``, for the cluster ``name``: one scan of the log
    (``count_for``), then its control batches and its snapshots."""
    with MetadataLog.open(path) as log:
        count = count_for(log)
        for _ in log.scan_into(log.log_start_offset, ALL_OFFSETS, count, count.batch_end):
            pass
        return counted_growth(log, name, count)


def count_for(log: MetadataLog) -> GrowthCount:
    """A count for a scan of every batch of ``log`` from its start offset (``MetadataLog.scan_into``: the log's
    scan reads each batch as every reader reads it, frame, CRC, chain, KRaft's rules: its damage is the error ``log
    verify`` names), handed the scan's values and batch ends by its own scan (``read_growth``) or by another
    reader's, through a tee (``growth_reader``: the python engine's replay)."""
    start = log.log_start_offset
    return growth_counter()(lambda base: _control_types(log, base, start), MINUTE_MS, type_order)


def type_order(type_key: int) -> tuple[str, int]:
    """A type key's place among a minute's rows of ``growth``: by Kafka's name of the type (``record_type_name``),
    then by key. A key past the ControlRecordTypes Kafka defines sorts first here (the rows' names refuse it
    later, ``_growth_rows``, as they did before the count sorted)."""
    try:
        return record_type_name(type_key), type_key
    except ValueError:
        return "", type_key


def growth_reader(count: GrowthCount) -> ScanReader:
    """``count`` as a reader of a scan: what ``metalog.log.tee.tee`` hands on to."""
    return ScanReader(count, count.batch_end)


def counted_growth(log: MetadataLog, name: str, count: GrowthCount) -> ClusterGrowth:
    """The four tables of ``log``, for the cluster ``name``, once a scan of every batch from its start offset has
    fed ``count`` (``count_for``): its rows, then the log's control batches and its snapshots."""
    return part_growth(log, name, GrowthPart.of(count))


def part_growth(log: MetadataLog, name: str, count: GrowthPart) -> ClusterGrowth:
    """``counted_growth`` of a count's columns: a whole log's count (``GrowthPart.of``), or its ranges' counts
    joined (``growth_parts.joined``: the Spark engine's)."""
    out = ClusterGrowth(name)
    in_order = all(a < b for a, b in pairwise(count.minutes))  # each minute counted once: no sums, no sort
    out.growth, out.log_size = _growth_rows(count, in_order), _log_size_rows(count, in_order)
    out.snapshots = list(_snapshots(log))
    out.leadership = [leadership(e) for e in quorum_history(log, count.marks) if e.kind in LEADERSHIP_KINDS]
    return out


def leadership(event: QuorumEvent) -> Leadership:
    """A quorum history event that starts an epoch, as a row."""
    assert event.timestamp is not None  # (only a snapshot's event may lack one)
    return Leadership(event.offset, event.timestamp, event.epoch, event.leader_id,
                      ",".join(str(v.replica_id) for v in event.voters),
                      ",".join(map(str, event.granting_voters)), event.record)


def growth_counter() -> type[GrowthCount]:
    """The GrowthCount class that runs: the compiled twin where it was built and ``METALOG_PURE`` is not set."""
    found: type[GrowthCount] = GrowthCount if GROWTH_COUNT.compiled is None else GROWTH_COUNT.compiled
    return found


def _growth_rows(count: GrowthPart, in_order: bool) -> TypeMinutes:
    """``growth``'s rows by minute and type name, from the counter's columns (a minute the log came back to is
    added up, unless ``in_order``: each minute counted once, in order, its types by name: ``type_order``)."""
    names = {key: record_type_name(key) for key in set(count.type_keys)}
    if in_order:  # the rows as counted: no sums, no sort
        return TypeMinutes(count.type_minutes, list(map(names.__getitem__, count.type_keys)), count.type_records,
                           count.type_bytes)
    keys = [(minute, names[key]) for minute, key in zip(count.type_minutes, count.type_keys, strict=True)]
    summed = sorted(_summed(keys, count.type_records, count.type_bytes).items())
    return TypeMinutes(array("q", [minute for (minute, _), _ in summed]), [name for (_, name), _ in summed],
                       array("q", [records for _, (records, _) in summed]),
                       array("q", [size for _, (_, size) in summed]))


def _log_size_rows(count: GrowthPart, in_order: bool) -> LogMinutes:
    """``log_size``'s rows by minute, the log's bytes summed up to each (a minute the log came back to is added
    up, unless ``in_order``: each minute counted once, in order)."""
    if in_order:  # no sums, no sort
        minutes, batches, sizes = count.minutes, count.minute_batches, count.minute_bytes
    else:
        summed = sorted(_summed(count.minutes, count.minute_batches, count.minute_bytes).items())
        minutes = array("q", [minute for minute, _ in summed])
        batches = array("q", [n for _, (n, _) in summed])
        sizes = array("q", [size for _, (_, size) in summed])
    return LogMinutes(array("q", minutes), array("q", batches), array("q", sizes), array("q", accumulate(sizes)))


def _summed(keys: Sequence[K], firsts: Sequence[int], seconds: Sequence[int]) -> dict[K, list[int]]:
    """[sum of firsts, sum of seconds] by key, in the keys' first order (a minute the log came back to is added
    up)."""
    out: dict[K, list[int]] = {}
    for key, first, second in zip(keys, firsts, seconds, strict=True):
        sums = out.get(key)
        if sums is None:
            out[key] = [first, second]
        else:
            sums[0] += first
            sums[1] += second
    return out


def _control_types(log: MetadataLog, base: int, start: int) -> list[tuple[int, int]]:
    """(type key, value bytes) of each record of the control batch at ``base`` from offset ``start`` on (the scan
    checked the batch and its records against KRaft's rules)."""
    batch = batch_at(log, base)
    found = []
    for record in batch.records():
        if record.offset < start:
            continue
        try:
            key = _CONTROL + parse_control_key(record.key)
        except DecodeError as e:
            raise LogError(f"offset {record.offset}: control record: {e}", file=batch.source) from None
        found.append((key, 0 if record.value is None else len(record.value)))
    return found


def _snapshots(log: MetadataLog) -> Iterator[Snapshot]:
    """Each snapshot read whole, as ``log verify`` reads it (its damage is the error verify names)."""
    for snapshot in log.snapshot_ids():
        found = SnapshotReader(log.directory / snapshot.file_name).verify()
        yield Snapshot(snapshot.end_offset, snapshot.epoch, found.last_contained_log_timestamp, found.records,
                       found.size_in_bytes, snapshot.file_name)
