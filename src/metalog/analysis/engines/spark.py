"""The Spark engine: the parallel replay's two passes as Spark stages over offset ranges of every cluster.

The SparkContext and the JVM it runs on are ``engines.spark_session``'s.

A cluster is cut into ranges only where that ends the work sooner (``range_counts``). A range near the snapshot,
state image or log start before it catches up from there itself (``parallel.caught_up``); for ranges farther
out, stage 1 computes on executors the deltas of the pieces between each range and the point before it, and the
driver composes them into each range's prefix (small: deltas hold only what changed). Stage 2 loads each range's
snapshot or image, catches up or applies the prefix, replays the range through the per-batch step, and the
executor writes what it makes
(``spark_tables``): a cluster replayed in one range as its tables, as the python engine writes them; the ranges
of a cluster cut in several as Arrow streams, which stage 3, a task per such cluster, writes as its tables.
Executors open the log directories and write the output directory themselves: the paths must be visible to
them (local disks for ``local[*]``; a shared filesystem on a cluster). Each range counts its growth tables as it
replays (``spark_tables.replay_task``): a cluster replayed whole writes them in its task, a cut one's ranges write
their counts beside their streams, and a task of stage 3 joins them and writes the cluster's. Only offsets, point
names, deltas and each task's counts and CPU seconds travel through the driver; no row goes through the JVM (but
the growth tables' for ``--csv``, as their CSV tables are the driver's). Work is placed on partitions by a stable
hash.
"""

from __future__ import annotations

import heapq
import shutil
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from metalog.analysis.domain.schema import BROKERS, BUCKETS, DIRECTORIES, EVENTS, FAILURES, TIMELINE
from metalog.analysis.engines.parallel import (
    CATCH_UP,
    Origin,
    Piece,
    catch_up_ranges,
    log_outline,
    origin_offset,
    plan,
    prefixes,
    range_delta,
    split_ranges,
)
from metalog.analysis.engines.request import AnalysisRequest, AnalysisSummary, Progress, Stage, T
from metalog.analysis.engines.spark_meanwhile import MeanwhileStarts
from metalog.analysis.engines.spark_starts import StartJob
from metalog.analysis.engines.spark_tables import (
    GrowthTask,
    Output,
    RangeTask,
    TableTask,
    Written,
    growth_written,
    replay_task,
    series_dir,
    write_joined_growth,
    write_outputs,
)
from metalog.analysis.outputs.growth import ClusterGrowth
from metalog.analysis.outputs.writers import SERIES
from metalog.replay.points import StartPoint
from metalog.state.overlay import RangeDelta, fold

__all__ = ["CATCH_UP_WEIGHT", "DRIVER_CATCH_UP", "OUTPUT_TASKS", "RANGE_SLACK", "STEP_SHARE", "WRITE_SHARE",
           "ClusterRanges", "DriverStarts", "Placed", "SparkEngine", "StageReport", "delta_cuts", "driver_starts",
           "makespan", "place", "plan_span", "range_counts", "stable_hash"]

R = TypeVar("R")

RANGE_SLACK = 1.1  # how much sooner a cut must end the work than keeping the cluster whole (modelled): a cut
# costs CPU (the range streams, the catch-up: a third more for a 1M-record cluster cut in two), for 5 equal
# clusters on 2 cores more than the 6% of the span it saves
# The CPU per record of a cluster's analysis, as shares of its whole task's (the replay, the per-batch step and
# the tables written, in one task: 6.6 s for the 5M-record log of benchmarks/analyze.py; load 3.7, 2026-11-28):
STEP_SHARE = 0.59  # a range's task: the replay and the step, the rows as Arrow streams (2.33 s for its first 2.98M)
CATCH_UP_WEIGHT = 0.22  # a range's catch-up from its origin (``parallel.caught_up``): 0.88 s for 2.98M records
# a cut cluster's outputs (``writers.OUTPUTS``) written from its ranges' streams, each group a task of the third
# stage, and its share (5M records: the series 1.45 s, timeline_batches 0.91 s, timeline_buckets 0.62 s,
# broker_timeline 0.18 s, the three small tables 0.08 s; the series and the buckets in one task 0.78 of the two
# apart, as the timeline's streams are made chunks again once: 2.24 s against 1.79 s + 1.08 s at load 13; and
# their streams' batches joined, ``spark_tables.GATHER_ROWS``, 0.81 of that, timeline_batches 0.95)
OUTPUT_TASKS: tuple[tuple[tuple[str, ...], float], ...] = (
    ((SERIES, BUCKETS.name), 0.2), ((TIMELINE.name,), 0.133), ((BROKERS.name,), 0.027),
    ((DIRECTORIES.name, FAILURES.name, EVENTS.name), 0.012))
WRITE_SHARE = sum(share for _, share in OUTPUT_TASKS)


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


def plan_span(sizes: Sequence[int], counts: Sequence[int], cores: int) -> float:
    """How long the replay's job and the third stage take on ``cores`` with ``counts`` ranges per cluster, in
    records of whole-task work: a whole cluster costs its size; a cluster cut in n equal ranges costs, per range,
    ``STEP_SHARE`` of the range's records plus ``CATCH_UP_WEIGHT`` of those before it (it catches up from the log's
    start: a snapshot or image on the way makes it less), then a task per group of its outputs in the third stage
    (``OUTPUT_TASKS``). (Each range counts its growth as it replays: in its share.)"""
    tasks: list[float] = []
    writes: list[float] = []
    for size, n in zip(sizes, counts, strict=True):
        if n == 1:
            tasks.append(size)
            continue
        tasks += [size / n * (STEP_SHARE + j * CATCH_UP_WEIGHT) for j in range(n)]
        writes += [size * share for _, share in OUTPUT_TASKS]
    return makespan(tasks, cores) + makespan(writes, cores)


def range_counts(sizes: Sequence[int], cores: int, slack: float = RANGE_SLACK) -> list[int]:
    """Ranges per cluster: each whole (no deltas, no streams, no third stage) unless cutting ends the work
    ``slack`` times sooner (``plan_span``): the cluster with the largest ranges is cut once more while that holds,
    up to ``CATCH_UP`` + 1 ranges (so that every range catches up from its origin; an explicit ``ranges`` may go
    further, with deltas). 5 or 20 equal clusters on 2 cores stay whole; one large cluster on 2 cores is cut in
    two."""
    counts = [1] * len(sizes)
    best = plan_span(sizes, counts, cores)
    while cores > 1 and sizes:
        widest = max(range(len(sizes)), key=lambda i: sizes[i] / counts[i])
        if counts[widest] > CATCH_UP or sizes[widest] < 2 * (counts[widest] + 1):
            break
        trial = [n + (i == widest) for i, n in enumerate(counts)]
        span = plan_span(sizes, trial, cores)
        if span * slack >= best:
            break
        counts, best = trial, span
    return counts


@dataclass(frozen=True)
class ClusterRanges:
    """A cluster of the fleet as the engine plans it: its log directory (absolute), name, first and last offsets,
    and the snapshots and state images its ranges may start from."""

    path: str
    name: str
    first: int
    last: int
    points: list[StartPoint]

    @property
    def size(self) -> int:
        return max(self.last - self.first + 1, 0)


# records a driver's process catches up over at most while the JVM starts (``driver_starts``): about 1 s of it free
# between the JVM's launch and the first task, at 5-6M records a second (the 5M log cut in two: 2.5M, 0.46 s)
DRIVER_CATCH_UP = 4_000_000


@dataclass(frozen=True)
class DriverStarts:
    """A cut cluster's ranges (``bounds``, equal) as the driver plans them before its JVM starts: each later
    range's origin says where its start state is written while the JVM starts (``Origin.image``,
    ``spark_starts``). The engine takes them where its own plan of the cluster has those ranges and origins."""

    name: str
    first: int
    last: int
    bounds: tuple[tuple[int, int], ...]
    origins: tuple[Origin, ...]

    def jobs(self, path: str) -> list[StartJob]:
        return [StartJob(path, o.point, lo, o.image) for (lo, _), o in zip(self.bounds, self.origins, strict=True)
                if o.image is not None]


def driver_starts(clusters: Sequence[ClusterRanges], cores: int, root: Path,
                  budget: int = DRIVER_CATCH_UP) -> list[DriverStarts]:
    """The clusters ``range_counts`` cuts on ``cores``, cut in equal ranges,
    whose later ranges all catch up (``parallel.plan``), while their catch-ups come to at most ``budget``
    records in all, the largest cluster first: their start states to write into ``root``."""
    out: list[DriverStarts] = []
    counts = range_counts([c.size for c in clusters], cores)
    for i in sorted(range(len(clusters)), key=lambda i: -clusters[i].size):
        c, n = clusters[i], counts[i]
        bounds = split_ranges(c.first, c.last, n)
        origins = plan(bounds, c.first, c.points)
        later = list(zip(bounds, origins, strict=True))[1:]
        work = sum(lo - origin_offset(c.first, o.point) for (lo, _), o in later)
        if n < 2 or not all(o.catch_up for _, o in later) or work > budget:
            continue
        budget -= work
        images = [None] + [str(root / f"{i}-{lo}.start") for (lo, _), _ in later]
        out.append(DriverStarts(c.name, c.first, c.last, tuple(bounds),
                                tuple(replace(o, image=image) for o, image in zip(origins, images, strict=True))))
    return out


@dataclass(frozen=True)
class Placed:
    """Tasks for the executors: ``items``, each placed by its key (cluster, range number) and weight (``place``)."""

    items: Sequence[Any]
    keys: Sequence[tuple[str, int]]
    weights: Sequence[int]


def _on_partitions(sc: Any, fn: Callable[[Any], Any], work: Placed, partitions: int | None,
                   cpu: list[float]) -> list[Any]:
    """``fn`` over ``work``'s items on executors, each item in the partition ``place`` gives its key; results in
    the items' order. Items travel inside the tasks (no shuffle). Each task's CPU seconds are appended to ``cpu``
    (what the benchmark models a quiet machine with)."""
    items = work.items
    if not items:
        return []
    n = partitions or len(items)
    buckets = [[(i, items[i]) for i in slot] for slot in place(work.keys, n, work.weights)]

    def run(bucket: list[tuple[int, Any]]) -> list[tuple[float, list[tuple[int, Any]]]]:
        start = time.process_time()
        out = [(i, fn(item)) for i, item in bucket]
        return [(time.process_time() - start, out)] if bucket else []

    found: dict[int, Any] = {}
    for seconds, pairs in sc.parallelize(buckets, n).flatMap(run).collect():  # n buckets in n slices: one each
        cpu.append(seconds)
        found.update(pairs)
    return [found[i] for i in range(len(items))]


def _delta(item: tuple[str, int, int]) -> RangeDelta:
    return range_delta(*item)


def _weight(task: RangeTask, first: int) -> int:
    """A range's work as ``plan_span`` models it (placement starts the heaviest first): a whole cluster's records;
    a range's at ``STEP_SHARE``, with its catch-up from its origin (``first``: the log's) at ``CATCH_UP_WEIGHT``."""
    size = task.hi - task.lo + 1
    if task.ranges == 1:
        return size
    if task.origin.image is not None:  # (caught up by the driver's process)
        return int(size * STEP_SHARE)
    behind = task.lo - origin_offset(first, task.origin.point)
    return int(size * STEP_SHARE + behind * CATCH_UP_WEIGHT * task.origin.catch_up)


def _task(task: RangeTask | TableTask | GrowthTask) -> Written:
    """A task of the replay's job or the third stage: a range replayed, outputs of a cut cluster written, or a cut
    cluster's growth tables from its ranges' counts."""
    if isinstance(task, RangeTask):
        return replay_task(task)
    if isinstance(task, TableTask):
        return write_outputs(task)
    return write_joined_growth(task)


@dataclass
class SparkEngine:
    """The Spark engine on ``spark``: a SparkContext (``spark_session.spark_context``), or a SparkSession, whose
    context it runs on. ``ranges``: offset ranges per cluster (default: ``range_counts``, as few as end the work
    soonest; one core replays each cluster whole). ``partitions``: Spark partitions per stage (default one per
    task). ``points``: start ranges from snapshots and state images. ``catch_up``: ranges at most this many times
    their size after their origin catch up from it, the others start from deltas (``parallel.plan``; 0: all from
    deltas). ``meanwhile``: the start states the driver planned while the JVM started (``spark_meanwhile``), which
    the engine takes where its plan has them. The summary's ``task_cpu`` has each stage's CPU seconds per task."""

    spark: Any
    ranges: int | None = None
    partitions: int | None = None
    points: bool = True
    name: str = "spark"
    catch_up: float = CATCH_UP
    meanwhile: MeanwhileStarts | None = None

    @property
    def context(self) -> Any:
        """The SparkContext the engine runs on."""
        return getattr(self.spark, "sparkContext", self.spark)

    @property
    def cores(self) -> int:
        """How many tasks run at once: the context's default parallelism (``local[2]``: 2)."""
        return int(self.context.defaultParallelism)

    def run(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Independent tasks (the report's clusters: items with ``name`` and ``weight``) on the executors, one
        partition each, the heaviest started first; results in the items' order."""
        return _on_partitions(self.context, fn, Placed(items, [(i.name, 0) for i in items], [i.weight for i in items]),
                              None, [])

    def analyze(self, request: AnalysisRequest, progress: Progress | None = None,
                stage: Stage | None = None) -> AnalysisSummary:
        """Every cluster's tables written by the executors, the same files as the python engine's; each range
        counts its growth as it replays, a whole cluster's writes its growth tables, a cut one's are written in the
        third stage from its ranges' counts (their CSV tables: the driver, from their rows)."""
        from metalog.analysis.outputs import openmetrics as om
        from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, fresh_growth_tables, write_csv
        from metalog.analysis.outputs.layout import TABLES
        from metalog.analysis.outputs.tables import claim_output, write_csv_from_tables
        from metalog.analysis.outputs.writers import fresh_tables

        out = request.out
        claim_output(out)
        taken = self.meanwhile.stop() if self.meanwhile is not None else ()
        sc = self.context
        outlines = [log_outline(c.path, points=self.points) for c in request.clusters]  # (each log opened once)
        clusters = [ClusterRanges(str(Path(c.path).resolve()), c.name, o.first, o.last, o.points)
                    for c, o in zip(request.clusters, outlines, strict=True)]
        counts = [self.ranges] * len(clusters) if self.ranges else range_counts([c.size for c in clusters],
                                                                                  sc.defaultParallelism)
        report = StageReport(sc, sum(c.size for c in clusters), progress, stage)
        task_cpu: dict[str, list[float]] = {}
        prefixed = self._prefixes(clusters, counts, report, task_cpu, {s.name: s for s in taken})
        if self.meanwhile is not None and not any(o.image for c in prefixed for _, o, _ in c):
            self.meanwhile.drop()  # (none taken: its process need not go on)
        fresh_tables(out)
        fresh_growth_tables(out)
        scratch = out.resolve() / f".spark-{uuid.uuid4().hex}"
        output = Output(str(out.resolve()), str(scratch), request.bucket_ms, request.metrics_every_batch,
                        request.csv)
        try:
            done = self._replay(clusters, prefixed, output, report, task_cpu)
            blocks = series_dir(str(scratch))  # (a cluster without batches has none)
            metrics = om.concatenate(out / om.FILE, lambda family, name: [
                p for p in [blocks / f"{request.names.index(name)}-{family}.om"] if p.exists()], request.names)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        grown = {w.growth.name: w.growth for w in done if w.growth is not None}
        unplanned = [_no_ranges(c, output) for c, ranges in zip(clusters, prefixed, strict=True) if not ranges]
        written = [out / table for table in TABLES]
        if request.csv:
            written += write_csv_from_tables(out, request.names)
        written += [metrics, *(out / table for table in GROWTH_TABLES)]
        if request.csv:
            found = {**{g.name: g for g in unplanned}, **{name: g.unpacked() for name, g in grown.items()}}
            written += [write_csv(out, table, [found[c.name] for c in clusters]) for table in GROWTH_TABLES]
        return AnalysisSummary(out, tuple(request.names), sum(w.records for w in done),
                               sum(w.batches for w in done), sum(w.events for w in done), tuple(written), task_cpu)

    def _prefixes(self, clusters: Sequence[ClusterRanges], counts: Sequence[int], report: StageReport,
                  task_cpu: dict[str, list[float]], starts: dict[str, DriverStarts]) \
            -> list[list[tuple[tuple[int, int], Origin, RangeDelta]]]:
        """Stage 1: each cluster's ranges, their origins and prefixes, from the pieces' deltas computed on the
        executors (each piece in ``delta_cuts`` cuts, so every round of the cores is full); none for ranges that
        catch up (the stage then does not run), or whose start states the driver writes (``starts``)."""
        sc = self.context
        planned = [self._planned(c, n, starts.get(c.name)) for c, n in zip(clusters, counts, strict=True)]
        bounds = [b for b, _ in planned]
        origins = [o for _, o in planned]
        pieces = [(i, piece) for i, os_ in enumerate(origins) for piece in sorted({p for o in os_ for p in o.pieces})]
        cuts = delta_cuts(len(pieces), sc.defaultParallelism)
        subs = [(i, piece, sub) for i, piece in pieces for sub in split_ranges(*piece, cuts)]
        work = Placed([(clusters[i].path, *sub) for i, _, sub in subs],
                      [(clusters[i].name, n) for n, (i, _, _) in enumerate(subs)],
                      [hi - lo + 1 for _, _, (lo, hi) in subs])
        found: list[RangeDelta] = []
        if subs:
            with report.stage("range deltas", sum(hi - lo + 1 for _, _, (lo, hi) in subs)):
                found = _on_partitions(sc, _delta, work, self.partitions, task_cpu.setdefault("deltas", []))
        cut_deltas: list[dict[Piece, list[RangeDelta]]] = [{} for _ in clusters]
        for (i, piece, _), delta in zip(subs, found, strict=True):  # subs are in offset order within a piece
            cut_deltas[i].setdefault(piece, []).append(delta)
        # composition is associative: a piece's delta from its cuts' deltas
        deltas = [{piece: fold(cut) for piece, cut in by_piece.items()} for by_piece in cut_deltas]
        return [list(zip(b, os_, prefixes(os_, ds), strict=True))
                for b, os_, ds in zip(bounds, origins, deltas, strict=True)]

    def _planned(self, cluster: ClusterRanges, n: int, given: DriverStarts | None) \
            -> tuple[list[tuple[int, int]], list[Origin]]:
        """A cluster's ``n`` ranges and their origins: the driver's (``driver_starts``: equal ranges, the later
        ones' start states written by its process) where this plan would make those very origins of those ranges;
        else ``range_bounds``' ranges with ``parallel.plan``'s origins."""
        if given is not None and not self.ranges and len(given.bounds) == n \
                and (given.first, given.last) == (cluster.first, cluster.last) \
                and plan(given.bounds, cluster.first, cluster.points, self.catch_up) \
                == [replace(o, image=None) for o in given.origins]:
            return list(given.bounds), list(given.origins)
        bounds = self.range_bounds(cluster, n)
        return bounds, plan(bounds, cluster.first, cluster.points, self.catch_up)

    def range_bounds(self, cluster: ClusterRanges, n: int) -> list[tuple[int, int]]:
        """A cluster's ``n`` ranges: equal ones for a ``ranges`` asked for; in a plan of the engine's own, ranges
        that end together as each catches up (``catch_up_ranges``: two ranges of 5M records, 3.07M then 1.93M),
        unless some of them would then start from deltas (``plan``)."""
        equal = split_ranges(cluster.first, cluster.last, n)
        if self.ranges or n == 1 or self.catch_up <= 0:
            return equal
        balanced = catch_up_ranges(cluster.first, cluster.last, n, CATCH_UP_WEIGHT / STEP_SHARE)
        starts = plan(balanced, cluster.first, cluster.points, self.catch_up)[1:]
        return balanced if all(origin.catch_up for origin in starts) else equal

    def _replay(self, clusters: Sequence[ClusterRanges],
                prefixed: Sequence[Sequence[tuple[tuple[int, int], Origin, RangeDelta]]], output: Output,
                report: StageReport, task_cpu: dict[str, list[float]]) -> list[Written]:
        """Stage 2, every range replayed and written on the executors, its growth counted as it is; stage 3, the
        outputs of each cluster cut in several ranges written from their ranges' chunks, a task per group of them
        (``OUTPUT_TASKS``), and beside them a task per such cluster writing its growth tables from its ranges'
        counts (``spark_tables.GrowthTask``: the ranges wrote them beside their chunks)."""
        sc = self.context
        cut = [i for i, ranges in enumerate(prefixed) if len(ranges) > 1]
        tasks = [RangeTask(c.path, c.name, i, n, len(ranges), lo, hi, origin, prefix, output)
                 for i, (c, ranges) in enumerate(zip(clusters, prefixed, strict=True))
                 for n, ((lo, hi), origin, prefix) in enumerate(ranges)]
        keys = [(t.name, t.number) for t in tasks]
        weights = [_weight(t, clusters[t.cluster].first) for t in tasks]
        with report.stage("replay", sum(c.size for c in clusters)):
            found: list[Written] = _on_partitions(sc, _task, Placed(tasks, keys, weights), self.partitions,
                                                  task_cpu.setdefault("replay", []))
        if cut:
            writes: list[TableTask | GrowthTask] = [
                TableTask(clusters[i].name, i, len(prefixed[i]), outputs, output)
                for i in cut for outputs, _ in OUTPUT_TASKS]
            weights = [int(clusters[i].size * share) for i in cut for _, share in OUTPUT_TASKS]
            writes += [GrowthTask(clusters[i].path, clusters[i].name, i, len(prefixed[i]), output) for i in cut]
            weights += [0] * len(cut)  # (the lightest: a row per minute and type, and the control batches)
            keys = [(t.name, n) for n, t in enumerate(writes)]
            with report.stage("tables", sum(clusters[i].size for i in cut)):
                found += _on_partitions(sc, _task, Placed(writes, keys, weights), self.partitions,
                                        task_cpu.setdefault("tables", []))
        return found


def _no_ranges(cluster: ClusterRanges, output: Output) -> ClusterGrowth:
    """The growth tables of a cluster with no offset to replay (no range: none counts its growth), written here: no
    row of growth or log_size, its snapshots, no epoch."""
    from metalog.analysis.outputs.growth import read_growth

    growth = read_growth(cluster.path, cluster.name)
    growth_written(growth, replace(output, growth_rows=False))
    return growth


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
