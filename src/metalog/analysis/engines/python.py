"""The python engine: each cluster replayed in this process, one after another, its tables written as the replay
goes (``writers.TableWriters``): memory flat in the logs' sizes."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from metalog.analysis.domain.columns import Gathered
from metalog.analysis.engines.replay import TimelineReplay, log_records
from metalog.analysis.engines.request import AnalysisRequest, AnalysisSummary, Progress, Stage, T, here
from metalog.analysis.outputs.growth import ClusterGrowth, part_growth
from metalog.analysis.outputs.growth_tables import write_growth_tables
from metalog.analysis.outputs.writers import ROWS_PER_GROUP, TableWriters
from metalog.replay.gc import gc_paused
from metalog.replay.history import MetadataHistory

R = TypeVar("R")


@dataclass(frozen=True)
class PythonEngine:
    """No JVM, one process: ``analyze`` replays the clusters one after another."""

    name: str = "python"

    def analyze(self, request: AnalysisRequest, progress: Progress | None = None,
                stage: Stage | None = None) -> AnalysisSummary:
        from metalog.analysis.outputs.tables import claim_output

        out = request.out
        claim_output(out)
        # the size of the work, for progress only (each log opened once more: none when nobody is told)
        total = 0 if progress is None else sum(log_records(c.path) for c in request.clusters)
        records = 0
        grown: list[ClusterGrowth] = []  # each cluster's growth pass, counted as its replay scans its log
        with TableWriters(out, request.bucket_ms, csv=request.csv,
                          metrics_every_batch=request.metrics_every_batch) as writers:
            for cluster in request.clusters:
                writers.cluster(cluster.name)
                report = None if progress is None else _offset(progress, records, total)
                gathered = Gathered(writers.add, ROWS_PER_GROUP)  # (the writers' cost is partly per chunk)
                records += replay_cluster(cluster.path, cluster.name, gathered, report, grown.append)
                gathered.flush()
                writers.end_cluster()
            written = writers.close()
            batches, events = writers.batches, writers.events_written
        written += write_growth_tables(out, grown, csv=request.csv)
        return AnalysisSummary(out, tuple(request.names), records, batches, events, tuple(written))

    @property
    def cores(self) -> int:
        """``run``'s tasks run one after another, here."""
        return 1

    def run(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return here(fn, items)


def _offset(progress: Progress, before: int, total: int) -> Callable[[int], None]:
    return lambda records: progress(before + records, total)


def replay_cluster(path: str | os.PathLike[str], name: str, sink: Callable[..., object],
                   progress: Callable[[int], object] | None = None,
                   growth: Callable[[ClusterGrowth], object] | None = None) -> int:
    """One cluster's log replayed from its start, its rows handed to ``sink`` as chunks in log order; its data
    records. ``growth``: told the cluster's growth tables (``outputs.growth``), counted from the replay's own scan
    of the log (a tee: the log is read once)."""
    with MetadataHistory(path) as history, gc_paused():
        log = history.log
        start = log.log_start_offset
        replay = TimelineReplay(log, name, history.state_before_log())
        if growth is None:
            return replay.run(start, history.end_offset, sink, progress)
        records, part = replay.run_counted(start, history.end_offset, sink, progress)
        growth(part_growth(log, name, part))
        return records
