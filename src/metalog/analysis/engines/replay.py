"""The python engine: replay each cluster's log once, a timeline row and events per batch.

``TimelineReplay`` is the loop over batches both engines share (the per-batch step is ``domain.step``); the shared
result types are in ``metalog.analysis.result`` and the tables on disk in ``metalog.analysis.tables`` (their names
are importable from here too)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import BrokerTables
from metalog.analysis.domain.columns import Chunk
from metalog.analysis.domain.schema import BROKERS, DIRECTORIES, EVENTS, FAILURES, TIMELINE
from metalog.analysis.domain.twins import cluster_step
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
from metalog.errors import LogError, MetalogError
from metalog.log import MetadataLog
from metalog.log.control import ControlType, decode_control
from metalog.log.scan import ScannedBatch
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory, replay_scanned
from metalog.state import MetadataLoader
from metalog.state.image import MetadataImage
from metalog.state.loader import OpenTransaction

__all__ = ["BUCKET_COLUMNS", "Analysis", "Progress", "TimelineReplay", "analyze_log", "analyze_python", "buckets",
           "add_chunks", "cluster_name", "cluster_names", "dict_rows", "leader_changes", "log_records", "parse_bucket",
           "read_table", "write_outputs", "write_python", "write_table"]


class TimelineReplay:
    """One cluster's batches, in log order, through the per-batch step (``domain.step.ClusterStep``, or its compiled
    twin where built: ``domain.twins``): the loop both engines share. The loader keeps no image per batch
    (``images=False``): it tells the step each delta, and builds an image only where the step asks for one.
    ``log_start``: the batches start at the log's start (else at a range of the parallel replay, whose ``image``
    is the state after the batch before)."""

    def __init__(self, log: MetadataLog, cluster: str, image: MetadataImage,
                 transaction: OpenTransaction | None = None, *, log_start: bool = True) -> None:
        self.log = log
        self.step = cluster_step()(cluster, image, self._image, log_start=log_start)
        self.loader = MetadataLoader(image, transaction=transaction, on_abort=self.step.aborted,
                                     on_publish=self.step.published, images=False)
        self.records = 0  # data records replayed

    def _image(self) -> MetadataImage:
        return self.loader.image

    def run(self, batches: Iterable[ScannedBatch], first: int,
            progress: Callable[[int], object] | None = None) -> None:
        """Each batch (in log order, its records from ``first`` on: a log may start inside its first batch)
        replayed, and the step's rows of it; ``progress(records replayed)`` after each batch."""
        loader, step, where, log = self.loader, self.step, self.log.directory, self.log
        for scanned in batches:
            base, last, timestamp, control, _ = scanned
            self.records += replay_scanned(loader, scanned, where, first)
            loader.end_batch(last)
            if control:
                for leader, epoch in leader_changes(log, base):
                    step.leader_change(last, leader, epoch)
            step.batch(last, timestamp, loader.in_transaction)
            if progress is not None:
                progress(self.records)


def dict_rows(chunk: Chunk) -> list[dict[str, Any]]:
    """A chunk's rows as dicts in its table's column order."""
    names = chunk.table.names
    return [dict(zip(names, row, strict=True)) for row in chunk.tuples()]


def add_chunks(result: Analysis, chunks: dict[str, Chunk]) -> None:
    result.rows += dict_rows(chunks[TIMELINE.name])
    result.events += dict_rows(chunks[EVENTS.name])
    result.by_broker.extend(BrokerTables(dict_rows(chunks[BROKERS.name]), dict_rows(chunks[DIRECTORIES.name]),
                                         dict_rows(chunks[FAILURES.name])))


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
        replay.run(batches, start, None if progress is None else lambda records: progress(done_before + records, total))
        out.records = replay.records
    add_chunks(out, replay.step.take())
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
        report = None if progress is None else (lambda records: progress(done_before + records, total))
        while True:
            replay.run(islice(batches, CHUNK_BATCHES), start, report)
            if not replay.step.pending:
                return replay.records
            for chunk in replay.step.take().values():
                writers.add(chunk)
