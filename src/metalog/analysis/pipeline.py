"""The python engine: replay each cluster's log once, a timeline row and events per batch.

``TimelineReplay`` is the per-batch step (and ``run`` the loop over batches) both engines share; the shared result
types are in ``metalog.analysis.result`` and the tables on disk in ``metalog.analysis.tables`` (their names are
importable from here too)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import BrokerCounter
from metalog.analysis.events import aborted, controller_leader, directory_failures, row_events
from metalog.analysis.result import Analysis, Progress, cluster_logs, cluster_name, cluster_names
from metalog.analysis.tables import (
    BUCKET_COLUMNS,
    buckets,
    claim_output,
    parse_bucket,
    read_table,
    write_outputs,
    write_table,
)
from metalog.analysis.timeline import RowCounter
from metalog.analysis.topic_changes import TopicChanges
from metalog.errors import LogError, MetalogError
from metalog.log import MetadataLog
from metalog.log.control import ControlType, decode_control
from metalog.log.scan import ScannedBatch
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory, replay_scanned
from metalog.state import MetadataLoader
from metalog.state.image import MetadataImage
from metalog.state.loader import AbortedTransaction, OpenTransaction

__all__ = ["BUCKET_COLUMNS", "UNKNOWN", "Analysis", "Progress", "TimelineReplay", "analyze_log", "analyze_python",
           "buckets", "cluster_name", "cluster_names", "leader_changes", "log_records", "parse_bucket", "read_table",
           "write_outputs", "write_python", "write_table"]

UNKNOWN = object()  # the row before a range of the parallel replay, which it does not know


class TimelineReplay:
    """One cluster's batches, in log order, into timeline rows and events: the step both engines share. A row
    per batch (control batches too), from the state Kafka's loader published after it; its events are the
    aborted transactions, the controller leader changes and the directory failures of that batch (the
    row-to-row events need the row before, which a range of the parallel replay may not have)."""

    def __init__(self, log: MetadataLog, cluster: str, image: MetadataImage,
                 transaction: OpenTransaction | None = None) -> None:
        self.log = log
        self._aborts: list[AbortedTransaction] = []
        self._changes = TopicChanges(image.topics)  # which topics each batch changed, for the counters
        self.loader = MetadataLoader(image, transaction=transaction, on_abort=self._aborts.append,
                                     on_publish=self._changes.published)
        self.counter = RowCounter(cluster)
        self.per_broker = BrokerCounter(cluster, image.brokers)  # broker_timeline, directory_timeline, ...
        self._brokers = image.brokers
        self.records = 0  # data records replayed

    def run(self, batches: Iterable[ScannedBatch], first: int, rows: list[dict[str, Any]],
            events: list[dict[str, Any]], prev: dict[str, Any] | None | object = UNKNOWN,
            progress: Callable[[int], object] | None = None) -> int:
        """The rows and events of ``batches`` (in log order, from record ``first`` on), appended to ``rows`` and
        ``events``: each batch's events, then the row-to-row events against the row before it. ``prev`` is the
        row before the first batch: None at the log's start; UNKNOWN for a range of the parallel replay, whose
        first row's row-to-row events are then left out. Returns where in ``events`` they belong (``assemble``
        puts them there). ``progress(records replayed)`` after each batch."""
        split = len(events)
        for scanned in batches:
            row, batch_events = self.batch(scanned, first)
            events += batch_events
            if prev is UNKNOWN:
                split = len(events)
            else:
                events += row_events(prev, row)  # type: ignore[arg-type]
            rows.append(row)
            prev = row
            if progress is not None:
                progress(self.records)
        return split

    def batch(self, scanned: ScannedBatch, first: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The batch's row and events; its records from ``first`` on (a log may start inside its first batch)."""
        base, last, max_ts, control, _ = scanned
        loader = self.loader
        self.records += replay_scanned(loader, scanned, self.log.directory, first)
        loader.end_batch(last)
        image = loader.image
        changes = self._changes.take(image.topics)
        row = self.counter.row(image, last, max_ts, loader.in_transaction, changes)
        self.per_broker.batch(image, last, max_ts, changes)
        events = [aborted(row, a.abort_offset, a.begin_offset) for a in self._aborts] if self._aborts else []
        self._aborts.clear()
        if control:
            events += [controller_leader(row, leader, epoch) for leader, epoch in leader_changes(self.log, base)]
        if image.brokers is not self._brokers:
            events += directory_failures(self._brokers, image.brokers, row)
            self._brokers = image.brokers
        return row, events


def leader_changes(log: MetadataLog, base_offset: int) -> list[tuple[int, int]]:
    """(leaderId, epoch) of each LeaderChangeMessage in the control batch at ``base_offset``; the epoch is the
    batch's partitionLeaderEpoch (control batches are few: read again here, with their keys)."""
    batch = next(log.batches(base_offset))
    out = []
    for record in batch.records():
        try:
            control = decode_control(record.key, record.value)
        except MetalogError as e:
            raise LogError(f"offset {record.offset}: {e}", file=log.directory) from None
        if control.type == ControlType.LEADER_CHANGE:
            out.append((control.message.leader_id, batch.partition_leader_epoch))
    return out


def analyze_log(path: str | os.PathLike[str], cluster: str | None = None, *, progress: Progress | None = None,
                done_before: int = 0, total: int = 0) -> Analysis:
    """Every batch's timeline row and the events of one cluster's log directory."""
    cluster = cluster or cluster_name(path)
    out = Analysis()
    with MetadataHistory(path) as history, gc_paused():
        log = history.log
        start = log.log_start_offset
        replay = TimelineReplay(log, cluster, history.state_before_log())
        batches = log.scan(start) if history.end_offset >= start else ()
        replay.run(batches, start, out.rows, out.events, None,
                   None if progress is None else lambda records: progress(done_before + records, total))
        out.records = replay.records
    out.by_broker = replay.per_broker.tables
    return out


def log_records(path: str | os.PathLike[str]) -> int:
    """Offsets in a log directory (the size of the work, for progress)."""
    with MetadataHistory(path) as history:
        return history.end_offset + 1 - history.log.log_start_offset


def analyze_python(logdirs: Sequence[str | os.PathLike[str]], *, progress: Progress | None = None) -> Analysis:
    """The python engine over a fleet: clusters one after another, in one process. ``logdirs``: log directories,
    or ``NAME=LOGDIR`` (``result.cluster_log``)."""
    clusters = cluster_logs(logdirs)
    total = sum(log_records(c.path) for c in clusters)
    result = Analysis()
    for cluster in clusters:
        one = analyze_log(cluster.path, cluster.name, progress=progress, done_before=result.records, total=total)
        result.rows.extend(one.rows)
        result.events.extend(one.events)
        result.records += one.records
        result.by_broker.extend(one.by_broker)
    return result


# batches replayed between two hand-overs of their rows to the writers (what the python engine holds at once)
CHUNK_BATCHES = 4096


@dataclass
class Written:
    """What ``write_python`` did: records replayed, timeline rows (batches), events, and the paths written."""

    records: int = 0
    batches: int = 0
    events: int = 0
    paths: list[Path] = field(default_factory=list)


def write_python(out: Path, logdirs: Sequence[str | os.PathLike[str]], width_ms: int, *, csv: bool = False,
                 metrics_every_batch: bool = False, progress: Progress | None = None) -> Written:
    """The python engine writing its tables as it goes (``writers``), into ``out``, the analysis' own
    (``tables.claim_output``): memory flat in the logs' sizes. ``metrics_every_batch``: controller_metrics.om
with a sample at every batch time. Needs pyarrow (``analyze_python`` and
    ``tables.write_outputs`` otherwise). The report is written from the tables afterwards."""
    from metalog.analysis.writers import TableWriters

    claim_output(out)
    clusters = cluster_logs(logdirs)
    total = sum(log_records(c.path) for c in clusters)
    done = Written()
    with TableWriters(out, width_ms, csv=csv, metrics_every_batch=metrics_every_batch) as writers:
        for cluster in clusters:
            writers.cluster(cluster.name)
            done.records += _write_cluster(cluster.path, cluster.name, writers, progress, done.records, total)
            writers.end_cluster()
        done.paths = writers.close()
        done.batches, done.events = writers.batches, writers.events_written
    return done


def _write_cluster(path: str | os.PathLike[str], name: str, writers: Any, progress: Progress | None,
                   done_before: int, total: int) -> int:
    """One cluster's replay, its rows handed to ``writers`` every ``CHUNK_BATCHES`` batches; its records."""
    with MetadataHistory(path) as history, gc_paused():
        log = history.log
        start = log.log_start_offset
        replay = TimelineReplay(log, name, history.state_before_log())
        batches = iter(log.scan(start) if history.end_offset >= start else ())
        tables = replay.per_broker.tables
        report = None if progress is None else (lambda records: progress(done_before + records, total))
        prev: dict[str, Any] | None = None
        while True:
            rows: list[dict[str, Any]] = []
            events: list[dict[str, Any]] = []
            replay.run(islice(batches, CHUNK_BATCHES), start, rows, events, prev, report)
            if not rows:
                return replay.records
            writers.add("timeline_batches", rows)
            writers.add("events", events)
            for table, found in (("broker_timeline", tables.brokers), ("directory_timeline", tables.directories),
                                 ("directory_failures", tables.failures)):
                writers.add(table, found)
                del found[:]  # (the counter appends to these lists: emptied in place)
            prev = rows[-1]
