"""The Spark engine: the parallel replay's two passes as Spark stages over offset ranges of every cluster.

The session and the JVM it runs on are ``metalog.analysis.engines.spark_session``'s (``spark_session`` and
``find_java`` are importable from here too).

Stage 1 computes on executors the deltas of the pieces between each range and the snapshot or state image
before it (none for a range right after one, or for the first range), the driver composes them into each
range's prefix (small: deltas hold only what changed), stage 2 loads each range's snapshot or image, applies
the prefix and replays the range into its rows, which stay on the executors (cached, compressed), and the tables
are DataFrames the executors make of them and write (``spark_tables``). Executors open the log directories
themselves: the paths must be visible to them (local disks for ``local[*]``; a shared filesystem on a cluster).
Only offsets, point names, deltas and each range's CPU seconds reach the driver. Work is placed on partitions by a
stable hash.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import BrokerTables
from metalog.analysis.engines.parallel import (
    Piece,
    fold,
    log_bounds,
    plan,
    prefixes,
    range_delta,
    range_start,
    replay_range,
    split_ranges,
    start_points,
)
from metalog.analysis.engines.spark_session import (
    default_driver_memory,
    find_java,
    import_pyspark,
    spark_errors,
    spark_session,
)
from metalog.analysis.engines.spark_tables import (
    OUTPUT_DDL,
    SEQ,
    buckets,
    dataframes,
    range_output,
    write,
    write_openmetrics,
)
from metalog.analysis.layout import TABLES, TIME_COLUMNS
from metalog.analysis.result import Analysis, cluster_logs
from metalog.errors import LogError
from metalog.replay.points import StartPoint
from metalog.state.overlay import RangeDelta

__all__ = ["RANGE_SLACK", "SparkAnalysis", "analyze_spark", "default_driver_memory", "delta_cuts", "executor_runner",
           "find_java", "import_pyspark", "makespan", "place", "range_counts", "spark_errors", "spark_session",
           "stable_hash"]

RANGE_SLACK = 1.05  # how far past an even share of the records the replay may end before a range is split


def stable_hash(text: str) -> int:
    """A placement hash equal in every process (Python's ``hash`` of a str is salted per process)."""
    return zlib.crc32(text.encode())


def place(keys: Sequence[tuple[str, int]], partitions: int, weights: Sequence[int] | None = None) -> list[list[int]]:
    """Indexes of ``keys`` (cluster, range number) per Spark partition: the heaviest first (``weights``, e.g.
    records; Spark starts a stage's tasks in partition order, so this is longest-first scheduling), then by the
    cluster's stable hash, name and range; dealt round-robin, so partitions differ by at most one task and
    every process places alike."""
    out: list[list[int]] = [[] for _ in range(partitions)]
    weight = weights or [0] * len(keys)
    order = sorted(range(len(keys)), key=lambda i: (-weight[i], stable_hash(keys[i][0]), keys[i][0], keys[i][1]))
    for rank, i in enumerate(order):
        out[rank % partitions].append(i)
    return out


def delta_cuts(pieces: int, cores: int) -> int:
    """Into how many cuts to split each piece's delta so the delta stage keeps every core busy to its end:
    2 ranges per core make 2 x cores - 1 pieces, one short of two full rounds, so the last round leaves a core
    idle; ``cores`` cuts each fill every round (6 tasks rather than 3 on 2 cores), while that stays within
    64 tasks. Composing the cuts' deltas gives the piece's delta (composition is associative)."""
    if pieces == 0 or pieces % cores == 0 or pieces * cores > 64:
        return 1
    return cores


def makespan(sizes: Sequence[float], cores: int) -> float:
    """How long ``sizes`` take on ``cores``, scheduled longest first."""
    ends = [0.0] * max(cores, 1)
    for size in sorted(sizes, reverse=True):
        heapq.heapreplace(ends, ends[0] + size)
    return max(ends)


def range_counts(sizes: Sequence[int], cores: int, slack: float = RANGE_SLACK) -> list[int]:
    """Ranges per cluster so that the replay's tasks keep ``cores`` busy to the end: one each (a cluster
    replayed whole needs no deltas), then the cluster with the largest ranges is split once more, until the
    ranges scheduled longest first end within ``slack`` of an even share of the records (5 equal clusters on
    2 cores: one of them in 2 halves, not 5 tasks in 3 rounds), or until 4 ranges per core."""
    counts = [1] * len(sizes)
    even = sum(sizes) / max(cores, 1)
    while cores > 1 and sum(counts) < 4 * cores + len(sizes):
        ranges = [size / n for size, n in zip(sizes, counts, strict=True) for _ in range(n)]
        if makespan(ranges, cores) <= even * slack:
            break
        widest = max(range(len(sizes)), key=lambda i: sizes[i] / counts[i])
        if sizes[widest] < 2 * (counts[widest] + 1):
            break
        counts[widest] += 1
    return counts


@dataclass(frozen=True)
class _Cluster:
    path: str
    name: str
    first: int
    last: int
    points: list[StartPoint]


def _on_partitions(sc: Any, fn: Callable[[Any], Any], items: Sequence[Any], keys: Sequence[tuple[str, int]],
                   weights: Sequence[int], partitions: int | None, cpu: list[float]) -> list[Any]:
    """``fn`` over ``items`` on executors, each item in the partition ``place`` gives its key; results in
    ``items`` order. Items travel inside the tasks (no shuffle). Each task's CPU seconds are appended to
    ``cpu`` (what the benchmark models a quiet machine with)."""
    if not items:
        return []
    n = partitions or len(items)
    buckets = [[(i, items[i]) for i in slot] for slot in place(keys, n, weights)]

    def run(bucket: list[tuple[int, Any]]) -> list[tuple[float, list[tuple[int, Any]]]]:
        start = time.process_time()
        out = [(i, fn(item)) for i, item in bucket]
        return [(time.process_time() - start, out)] if bucket else []

    found: dict[int, Any] = {}
    for seconds, pairs in sc.parallelize(buckets, n).flatMap(run).collect():  # n buckets in n slices: one each
        cpu.append(seconds)
        found.update(pairs)
    return [found[i] for i in range(len(items))]


def executor_runner(session: Any) -> Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]:
    """Runs independent tasks (the report's clusters: items with ``name`` and ``weight``) on the session's
    executors, one partition each, the heaviest started first; results in the items' order."""
    def run(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return _on_partitions(session.sparkContext, fn, items, [(item.name, 0) for item in items],
                              [item.weight for item in items], None, [])
    return run


def _delta(item: tuple[str, int, int]) -> RangeDelta:
    return range_delta(*item)


def _replay(item: tuple[int, str, str, int, int, StartPoint | None, RangeDelta, bool]) -> tuple[Any, ...]:
    """A range's replay, as a row of the cached replay (``spark_tables.OUTPUT_DDL``)."""
    index, path, cluster, lo, hi, point, prefix, log_start = item
    start = time.process_time()
    part = replay_range(path, cluster, lo, hi, range_start(path, point, prefix), log_start=log_start)
    check_spark_times(path, part.rows)
    return range_output(index, part, time.process_time() - start)


# Spark's TIMESTAMP counts microseconds in an int64: epoch ms within about 292,000 years of 1970
SPARK_MIN_MS, SPARK_MAX_MS = -(1 << 63) // 1000 + 1, ((1 << 63) - 1) // 1000


def check_spark_times(path: str, rows: Sequence[dict[str, Any]]) -> None:
    """A batch time beyond Spark's TIMESTAMP (any int64 is a batch's maxTimestamp, but Spark's tables hold
    microseconds) as one error naming the log and the batch: the python engine writes every int64 time."""
    for row in rows:
        ms = row["timestamp"]
        if not SPARK_MIN_MS <= ms <= SPARK_MAX_MS:
            raise LogError(f"offset {row['last_offset']}: the batch's timestamp {ms} ms is beyond what Spark's "
                           "TIMESTAMP holds (about 292,000 years from 1970); --engine python analyses it", file=path)


def _on_executors(sc: Any, fn: Callable[[Any], Any], items: Sequence[Any], keys: Sequence[tuple[str, int]],
                  weights: Sequence[int], partitions: int | None) -> Any:
    """An RDD of ``fn`` over ``items``, each item in the partition ``place`` gives its key and weight (no
    shuffle)."""
    n = partitions or max(len(items), 1)
    buckets = [[items[i] for i in slot] for slot in place(keys, n, weights)]
    return sc.parallelize(buckets, n).flatMap(lambda bucket: [fn(item) for item in bucket])


def analyze_spark(session: Any, logdirs: Sequence[str | os.PathLike[str]], *, ranges: int | None = None,
                  partitions: int | None = None, points: bool = True,
                  progress: Callable[[int, int], None] | None = None,
                  stage: Callable[[str], None] | None = None) -> SparkAnalysis:
    """Every cluster's tables as Spark DataFrames, computed on the executors; ``collect()`` equals
    ``analyze_python``'s result, ``write`` writes the same Parquet tables as the python engine.

    ``ranges``: offset ranges per cluster (default: ``range_counts``, as few as keep every core busy to the
    end; one core replays each cluster whole, which needs no deltas). ``partitions``: Spark
    partitions per stage (default one per task). ``points``: start ranges from snapshots and state images.
    ``progress(records done, total)`` and ``stage(name)`` report while it runs."""
    sc = session.sparkContext
    clusters = []
    for cluster in cluster_logs(logdirs):
        path, name = str(Path(cluster.path).resolve()), cluster.name
        first, last = log_bounds(path)
        clusters.append(_Cluster(path, name, first, last, start_points(path) if points else []))
    sizes = [max(c.last - c.first + 1, 0) for c in clusters]
    cores = sc.defaultParallelism
    counts = [ranges] * len(clusters) if ranges else range_counts(sizes, cores)
    bounds = [split_ranges(c.first, c.last, n) for c, n in zip(clusters, counts, strict=True)]
    origins = [plan(b, c.first, c.points) for c, b in zip(clusters, bounds, strict=True)]
    report = StageReport(sc, sum(sizes), progress, stage)
    result = SparkAnalysis()

    pieces = [(i, piece) for i, os_ in enumerate(origins) for piece in sorted({p for o in os_ for p in o.pieces})]
    cuts = delta_cuts(len(pieces), cores)
    subs = [(i, piece, sub) for i, piece in pieces for sub in split_ranges(*piece, cuts)]
    with report.stage("range deltas", sum(hi - lo + 1 for _, _, (lo, hi) in subs)):
        found = _on_partitions(sc, _delta, [(clusters[i].path, *sub) for i, _, sub in subs],
                               [(clusters[i].name, n) for n, (i, _, _) in enumerate(subs)],
                               [hi - lo + 1 for _, _, (lo, hi) in subs], partitions,
                               result.task_cpu.setdefault("deltas", []))
    cut_deltas: list[dict[Piece, list[RangeDelta]]] = [{} for _ in clusters]
    for (i, piece, _), delta in zip(subs, found, strict=True):  # subs are in offset order within a piece
        cut_deltas[i].setdefault(piece, []).append(delta)
    # composition is associative: a piece's delta from its cuts' deltas
    deltas = [{piece: fold(cut) for piece, cut in by_piece.items()} for by_piece in cut_deltas]

    items: list[tuple[int, str, str, int, int, StartPoint | None, RangeDelta, bool]] = []
    keys: list[tuple[str, int]] = []
    for c, b, os_, ds in zip(clusters, bounds, origins, deltas, strict=True):
        for n, ((lo, hi), origin, prefix) in enumerate(zip(b, os_, prefixes(os_, ds), strict=True)):
            items.append((len(items), c.path, c.name, lo, hi, origin.point, prefix, n == 0))
            keys.append((c.name, n))
    weights = [hi - lo + 1 for _, _, _, lo, hi, _, _, _ in items]
    replayed = session.createDataFrame(_on_executors(sc, _replay, items, keys, weights, partitions), OUTPUT_DDL)
    replayed = replayed.persist(_storage_level())  # each range replays once; the tables read it from here
    with report.stage("replay", sum(sizes)):
        found = sorted(tuple(r) for r in replayed.select("index", "cpu", "records").collect()) if items else []
    result.task_cpu["replay"] = [cpu for _, cpu, _ in found]
    result.frames = dataframes(replayed)
    result.replayed = replayed
    result.clusters = [c.name for c in clusters]
    result.records = sum(records for _, _, records in found)  # data records, as the python engine counts
    return result


def _storage_level() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK


@dataclass
class SparkAnalysis:
    """The Spark engine's result: a DataFrame per table (``frames``; each with a hidden ``_seq`` column, log
    order within a cluster), computed by the executors when written or read. ``write`` writes them; ``collect``
    brings every row to the driver (tests, small fleets)."""

    frames: dict[str, Any] = field(default_factory=dict)
    records: int = 0
    clusters: list[str] = field(default_factory=list)  # in fleet order
    task_cpu: dict[str, list[float]] = field(default_factory=dict)  # stage -> CPU seconds per task
    replayed: Any = None  # the cached replay the frames read

    def table(self, name: str, width_ms: int = 60_000) -> Any:
        """A table's DataFrame without ``_seq`` (timeline_buckets: of ``width_ms``)."""
        frame = buckets(self.frames["timeline_batches"], width_ms) if name == "timeline_buckets" else self.frames[name]
        return frame.drop(SEQ)

    def write(self, out: Path, width_ms: int, *, metrics_every_batch: bool = False) -> list[Path]:
        """Every table as Parquet and controller_metrics.om, by the executors (``metalog.analysis.layout``'s
        layout; ``metalog.analysis.openmetrics``, a sample at every batch time with ``metrics_every_batch``), into
        an output directory of the analysis' own (``tables.claim_output``)."""
        from metalog.analysis.tables import claim_output

        claim_output(out)
        timeline = self.frames["timeline_batches"].persist(_storage_level())  # its table, buckets and metrics
        try:
            frames = {**self.frames, "timeline_batches": timeline, "timeline_buckets": buckets(timeline, width_ms)}
            written = write({table: frames[table] for table in TABLES}, out, len(self.clusters))
            return [*written, write_openmetrics(timeline, out, self.clusters, every_batch=metrics_every_batch)]
        finally:
            timeline.unpersist()

    def collect(self) -> Analysis:
        """Every row on the driver, clusters in fleet order, in log order: what ``analyze_python`` returns."""
        order = {name: i for i, name in enumerate(self.clusters)}
        result = Analysis(records=self.records, task_cpu=self.task_cpu)
        found = {}
        for name, frame in self.frames.items():
            rows = [r.asDict() for r in frame.collect()]
            rows.sort(key=lambda r: (order[r["cluster"]], r[SEQ]))
            for r in rows:
                del r[SEQ]
                for c in TIME_COLUMNS & r.keys():
                    r[c] = int(r[c].timestamp() * 1000) if r[c] is not None else None
            found[name] = [{c: r[c] for c in TABLES[name]} for r in rows]
        result.rows, result.events = found["timeline_batches"], found["events"]
        result.by_broker = BrokerTables(found["broker_timeline"], found["directory_timeline"],
                                        found["directory_failures"])
        return result

    def unpersist(self) -> None:
        if self.replayed is not None:
            self.replayed.unpersist()


class StageReport:
    """Progress from Spark's status tracker while a stage runs: the stage's name, then its own records done
    (the share of its own tasks finished) of its own records; every stage ends with an exact report. The
    tracker is read from a thread; its failure (a JVM that went away) is raised by the stage, unless the
    stage's own work failed first (or Ctrl-C stopped it, which stops the JVM too)."""

    def __init__(self, sc: Any, total: int, progress: Callable[[int, int], None] | None,
                 stage: Callable[[str], None] | None) -> None:
        self.sc, self.total, self.progress, self.on_stage = sc, total, progress, stage
        self.group = ""

    @contextmanager
    def stage(self, name: str, records: int) -> Iterator[None]:
        """``records``: the records the stage reads (the deltas' pieces; the replay, all)."""
        if self.on_stage is not None:
            self.on_stage(name)
        if self.progress is not None:
            self.progress(0, records)
        self.group = f"metalog-{uuid.uuid4().hex}"  # a group per stage: its tasks only
        self.sc.setJobGroup(self.group, f"metalog analyze: {name}")
        stop = threading.Event()
        failed: list[Exception] = []
        poller = threading.Thread(target=self._poll, args=(stop, records, failed), daemon=True)
        if self.progress is not None and records:
            poller.start()
        try:
            yield
        finally:
            stop.set()
            if poller.is_alive():
                poller.join()
        if failed:
            raise failed[0]
        if self.progress is not None:
            self.progress(records, records)

    def _poll(self, stop: threading.Event, records: int, failed: list[Exception]) -> None:
        try:
            tracker = self.sc.statusTracker()
            while not stop.wait(0.25):
                done = tasks = 0
                for job in tracker.getJobIdsForGroup(self.group):
                    info = tracker.getJobInfo(job)
                    for sid in info.stageIds if info else ():
                        s = tracker.getStageInfo(sid)
                        if s is not None:
                            done, tasks = done + s.numCompletedTasks, tasks + s.numTasks
                if tasks and self.progress is not None:
                    self.progress(records * done // tasks, records)
        except Exception as e:  # noqa: BLE001 - raised by the stage, in the caller's thread
            failed.append(e)
