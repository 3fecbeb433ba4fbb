"""Every committed change to one subject of a metadata log, at the published point where it became visible.

One pass over the log with Kafka's loader (``metalog.state.MetadataLoader``): every record is replayed, as
``replay`` does, and a record whose apiKey and ids say it may touch the subject (``Subject.key_of``) is noted. At
the end of a batch that holds such a record the loader publishes (nothing while a transaction is open: its
records become visible when the batch holding its end does), and the subject's view of the state published
before is compared with its view of the state published now; each difference is a ``Change``. Publishing only
there (not at every batch end) gives the same states: a published state depends on no earlier batch end. A
BeginTransactionRecord inside a batch publishes what came before it, at the offset before it; an
AbortTransactionRecord drops its transaction's records, which then name no change. Nothing partial is shown.

A single snapshot file (``MetadataHistory.snapshot``) keeps no history: its state is one publication, at its end
offset - 1, of everything it holds, each entity created from nothing.

On a 1M-record log this is one replay (seconds); it starts from the state published before the first offset
asked for, from the nearest snapshot or state image (``MetadataHistory.batch_end_state``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from metalog.codec.definitions import MESSAGES, METADATA_BY_API_KEY
from metalog.errors import DecodeError, LogError, PointError
from metalog.log.control import ControlType, decode_control
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory
from metalog.replay.points import END, START, Point, ReplayResult, format_time
from metalog.replay.subjects import ALL, Key, Subject, shown
from metalog.state import MetadataLoader
from metalog.state.enums import record_type_name
from metalog.state.image import EMPTY, MetadataImage

_BEGIN = MESSAGES["BeginTransactionRecord"].api_key
_ABORT = MESSAGES["AbortTransactionRecord"].api_key
_RANK = {"broker": 0, "controller": 0, "features": 0, "quorum": 0, "topic": 1, "partition": 2, "config": 3}
LEADER_CHANGE = "LEADER_CHANGE"


@dataclass(frozen=True)
class RecordRef:
    """A record that made a change: its offset and Kafka's name of its type."""

    offset: int
    type: str


@dataclass(frozen=True)
class Change:
    """One difference between two consecutive published states, as far as the subject is concerned."""

    offset: int  # the published point where the change became visible
    timestamp: int | None  # the max timestamp of the batch holding ``offset``
    entity: str  # "foo-0", "broker 3", "TOPIC/foo", "quorum", ...
    field: str | None  # None: the entity as a whole appeared (before is None) or went (after is None)
    before: Any
    after: Any
    records: tuple[RecordRef, ...]
    key: Key = ()  # the subject's key of the entity (which a question of several subjects tells apart)

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "time": format_time(self.timestamp), "timestamp": self.timestamp,
                "entity": self.entity, "field": self.field, "before": self.before, "after": self.after,
                "records": [{"offset": r.offset, "type": r.type} for r in self.records]}


def changes(history: MetadataHistory, subject: Subject, first: int | None = None,
            last: int | None = None) -> Iterator[Change]:
    """The changes to ``subject`` published at offsets in [``first``, ``last``] (default: the whole log), in
    log order."""
    log = history.log
    log_start, end = log.log_start_offset, history.end_offset
    if history.snapshot is not None:
        if (first is None or first <= end) and (last is None or last >= end):
            yield from _Scan(history, subject, EMPTY, end, end).snapshot(history.state_at(end))
        return
    first = log_start if first is None else max(first, log_start)
    last = end if last is None else min(last, end)
    if first > last:
        return
    image = state_before(history, first)
    with gc_paused():
        yield from _Scan(history, subject, image, first, last).run()


def offset_range(history: MetadataHistory, first: Point = START, last: Point = END) -> tuple[int, int] | None:
    """The offsets ``changes`` looks at, from the POINT ``first`` to the POINT ``last``, both included: an offset
    is itself; a time ``first`` starts at the first batch whose timestamp is at or after it, a time ``last`` ends
    with the last batch whose timestamp is at or before it (a time means a batch end, as for ``replay``); start is
    the log's first offset, end its last. None: no offset of the log is left."""
    log = history.log
    if history.snapshot is not None:
        return _snapshot_range(history, first, last)
    lo, hi = _range_start(history, first), _range_end(history, last)
    if lo is None or hi is None:
        return None
    lo, hi = max(lo, log.log_start_offset), min(hi, history.end_offset)
    return (lo, hi) if lo <= hi else None


def _snapshot_range(history: MetadataHistory, first: Point, last: Point) -> tuple[int, int] | None:
    """A snapshot file's one published state, at its end offset - 1 and its header's time, if the range holds it."""
    assert history.snapshot is not None
    offset, taken = history.end_offset, history.snapshot.last_contained_log_timestamp
    at = {"offset": offset, "time": taken}
    after_first = first.kind in ("start", "end") or first.value is None or first.value <= at[first.kind]
    before_last = last.kind == "end" or last.kind != "start" and last.value is not None and \
        last.value >= at[last.kind]
    return (offset, offset) if after_first and before_last else None


def _range_start(history: MetadataHistory, point: Point) -> int | None:
    if point.kind == "start":
        return history.log.log_start_offset
    if point.kind == "end" or point.value is None:
        return history.end_offset
    if point.kind == "offset":
        return point.value
    batch = next(history.log.batches_from_timestamp(point.value), None)
    return None if batch is None else batch.base_offset


def _range_end(history: MetadataHistory, point: Point) -> int | None:
    if point.kind == "start":
        return history.log.log_start_offset - 1  # (nothing: the empty state before the log changed nothing)
    if point.kind == "end" or point.value is None:
        return history.end_offset
    if point.kind == "offset":
        return point.value
    try:
        return history.offset_at_time(point.value)
    except PointError:  # before the log's first batch
        return None


def state_before(history: MetadataHistory, first: int) -> MetadataImage:
    """The state published at the end of a batch before ``first`` (the empty state before a log that starts at 0,
    or the snapshot a log starts after)."""
    log_start = history.log.log_start_offset
    if first > log_start:
        try:
            return history.batch_end_state(first - 1).image
        except PointError:  # nothing was published before ``first``: from the start of the log
            pass
    return EMPTY if log_start == 0 else history.state_at(log_start - 1).image


class _Scan:
    def __init__(self, history: MetadataHistory, subject: Subject, image: MetadataImage, first: int,
                 last: int) -> None:
        self.history, self.subject, self.first, self.last = history, subject, first, last
        self.loader = MetadataLoader(image)
        self.published = image  # the state published last where the subject was looked at
        self.touched: dict[Key, list[tuple[int, str]]] = {}
        self.leader: dict[str, int] | None = None
        self.offset = -1  # the record read last, for an error's message
        subject.start(image)

    def run(self) -> Iterator[Change]:
        log, subject, loader = self.history.log, self.subject, self.loader
        scan_from, last = self.published.offset + 1, self.last
        assert _BEGIN not in subject.api_keys and _ABORT not in subject.api_keys  # the loop treats them apart
        if subject.control_records:
            self.leader = self._leader_before(scan_from)
        self.offset = scan_from
        try:
            for base, last_offset, timestamp, control, values in log.scan(max(scan_from, log.log_start_offset)):
                if base > last:
                    return
                if not control:
                    yield from self._data(base, values, scan_from, timestamp)
                elif subject.control_records:
                    yield from self._control(base, last_offset, timestamp)
                if self.touched and loader.end_batch(last_offset) is not None:
                    yield from self._publish(last_offset, timestamp)
        except DecodeError as e:
            raise LogError(f"offset {self.offset}: {e}", file=log.directory) from None

    def _data(self, base: int, values: Sequence[bytes | None], scan_from: int, timestamp: int) -> Iterator[Change]:
        """A data batch's records from ``scan_from``: the subject's keys noted, each record replayed; a transaction's
        Begin publishes what came before it, its Abort forgets the keys of its records."""
        subject, touched, replay, api_keys = self.subject, self.touched, self.loader.replay_value, self.subject.api_keys
        offset = base
        try:
            for offset, value in enumerate(values, base):
                if offset < scan_from:
                    continue
                kind = value[1] if value else -1
                if kind == _BEGIN:
                    yield from self._begin(value, offset, timestamp)
                elif kind == _ABORT:
                    self._abort(value, offset)
                else:
                    if kind in api_keys:
                        key = subject.key_of(value)  # type: ignore[arg-type]
                        if key is not None:
                            touched.setdefault(key, []).append((offset, _type_name(kind)))
                    replay(value, offset)
        finally:
            self.offset = offset

    def _begin(self, value: bytes | None, offset: int, timestamp: int) -> Iterator[Change]:
        before = self.loader.image
        self.loader.replay_value(value, offset)
        if self.touched and self.loader.image is not before:  # published what came before the Begin
            yield from self._publish(offset - 1, timestamp)

    def _abort(self, value: bytes | None, offset: int) -> None:
        begin = self.loader.transaction_start
        self.loader.replay_value(value, offset)
        if begin is None:
            return
        touched = self.touched  # the transaction's records are dropped: they changed nothing
        for key in list(touched):
            kept = [r for r in touched[key] if r[0] < begin]
            if kept:
                touched[key] = kept
            else:
                del touched[key]

    def snapshot(self, result: ReplayResult) -> Iterator[Change]:
        """A snapshot's state as one publication after the empty state: every entity of the subject in it."""
        self.touched[ALL] = []
        yield from self._publish(result.offset, result.timestamp, result.image)

    def _publish(self, offset: int, timestamp: int | None, image: MetadataImage | None = None) -> Iterator[Change]:
        """The loader published at ``offset`` (``image``: this state): the subject's differences since the state
        published before."""
        before_image, after_image = self.published, self.loader.image if image is None else image
        keys = list(self.touched)
        subject = self.subject
        before, after = subject.view(before_image, keys), subject.view(after_image, keys)
        rows = []
        if self.first <= offset <= self.last:
            changed = [k for k in before.keys() | after.keys() if before.get(k) != after.get(k)]
            labels = {k: subject.label(k, before_image, after_image) for k in changed}
            touched = self.touched
            for entity in sorted(changed, key=lambda k: _sort_key(k, labels[k])):
                b, a = before.get(entity), after.get(entity)
                refs = tuple(RecordRef(o, t) for o, t in sorted({r for k in subject.record_keys(entity)
                                                                  for r in touched.get(k, ())}))
                label = labels[entity]
                if (b is None or a is None) and subject.whole(entity):
                    rows.append(Change(offset, timestamp, label, None, _shown(b), _shown(a), refs, entity))
                    continue
                b, a = b or subject.absent(entity), a or subject.absent(entity)
                for name in [*b, *(f for f in a if f not in b)]:
                    if b.get(name) != a.get(name):  # (a Shown compares by its key)
                        rows.append(Change(offset, timestamp, label, name, _shown_value(b.get(name)),
                                           _shown_value(a.get(name)), refs, entity))
        subject.published(after_image, keys)
        self.published = after_image
        self.touched.clear()
        yield from rows

    # ---- the quorum: LeaderChange control records ------------------------------------------------------------
    def _control(self, base: int, last_offset: int, timestamp: int) -> Iterator[Change]:
        batch = next(self.history.log.batches(base, validate=False))
        for record in batch.records():
            try:
                c = decode_control(record.key, record.value)
            except DecodeError as e:
                raise LogError(f"offset {record.offset}: control record: {e}", file=batch.source) from None
            if c.type != ControlType.LEADER_CHANGE:
                continue
            now = {"leaderId": c.message.leader_id, "epoch": batch.partition_leader_epoch}
            if self.first <= last_offset <= self.last:
                yield Change(last_offset, timestamp, "quorum", "leader", self.leader, now,
                             (RecordRef(record.offset, LEADER_CHANGE),))
            self.leader = now

    def _leader_before(self, offset: int) -> dict[str, int] | None:
        """The quorum's leader as the last LeaderChange before ``offset`` names it."""
        log, leader = self.history.log, None
        for base, last_offset, _, control, _ in log.scan(log.log_start_offset):
            if last_offset >= offset:
                break
            if control:
                for change in self._control_before(base):
                    leader = change
        return leader

    def _control_before(self, base: int) -> Iterator[dict[str, int]]:
        batch = next(self.history.log.batches(base, validate=False))
        for record in batch.records():
            c = decode_control(record.key, record.value)
            if c.type == ControlType.LEADER_CHANGE:
                yield {"leaderId": c.message.leader_id, "epoch": batch.partition_leader_epoch}


@cache
def _type_name(kind: int) -> str:
    spec = METADATA_BY_API_KEY.get(kind)
    return str(kind) if spec is None else record_type_name(spec.name)


def _shown(fields: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if fields is None else {k: shown(v) for k, v in fields.items()}


def _shown_value(value: Any) -> Any:
    return shown(value)


def _sort_key(key: Key, label: str) -> tuple[Any, ...]:
    rank = 0 if key == ALL else _RANK.get(key[0], 4)
    # (the digit runs \d splits out are decimals: isdigit would also take a superscript, which int refuses)
    return (rank, [int(p) if p.isdecimal() else p for p in re.split(r"(\d+)", label)])


# ---- the table ------------------------------------------------------------------------------------------------
def render(rows: list[Change]) -> list[str]:
    """The changes as a table: offset, time, records, what changed, before -> after."""
    from metalog.replay.diff import table

    lines = [("OFFSET", "TIME", "RECORD", "WHAT", "CHANGE")]
    for c in rows:
        what = f"{c.entity} {c.field}" if c.field else c.entity
        if c.field is None:
            change = f"created {value_text(c.after)}" if c.before is None else "removed"
        else:
            change = f"{value_text(c.before)} -> {value_text(c.after)}"
        lines.append((str(c.offset), format_time(c.timestamp), records_text(c.records), what, change))
    return table(lines) if len(lines) > 1 else []


def records_text(records: tuple[RecordRef, ...]) -> str:
    """``PARTITION_CHANGE_RECORD@15``; several of a type: ``PARTITION_RECORD@10,11``; more than three: ``+N``."""
    by_type: dict[str, list[int]] = {}
    for r in records:
        by_type.setdefault(r.type, []).append(r.offset)
    parts = []
    for t, offsets in by_type.items():
        more = f"+{len(offsets) - 3}" if len(offsets) > 3 else ""
        parts.append(f"{t}@{','.join(map(str, offsets[:3]))}{more}")
    return " ".join(parts) or "-"


def value_text(value: Any) -> str:
    """A value in one short line: ``-`` for absent, lists without spaces, ``k=v`` pairs for a whole entity."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return " ".join(f"{k}={value_text(v)}" for k, v in value.items())
    return str(value)
