"""What the Spark engine's driver does while its JVM starts: the clusters' growth passes, and on a local master the
start states of a cut cluster's later ranges (``spark_starts``, a process of its own).

The JVM's launch and the SparkContext's start take 1.5-2 s of wall, in which the driver only waits and one of two
cores idles; the executors' first task begins later still. A growth pass needs no executor (it reads its log and
writes the cluster's files of the growth tables, ``growth_tables.write_cluster_parquet``), so ``DriverGrowth``
runs them there on a thread, the heaviest first, while the JVM launches (``spark_session.Meanwhile``: ``start`` as
the launch begins, ``stop`` as it ends, before the SparkContext's start, whose calls into the JVM a pass would
slow): the passes it has begun by then are the driver's, the others the executors', as they all were before (in
the replay's job beside whole clusters, in the third stage beside a cut one's outputs). The files are the same
either way.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metalog.analysis.engines.request import AnalysisRequest
from metalog.errors import MetalogError

if TYPE_CHECKING:
    from metalog.analysis.engines.spark import DriverStarts
    from metalog.analysis.engines.spark_starts import StartsProcess
    from metalog.analysis.outputs.growth import ClusterGrowth

__all__ = ["DriverGrowth", "DriverShare"]


@dataclass(frozen=True)
class DriverShare:
    """What the driver took by the time the engine plans: whether it made the growth tables' directories fresh
    (``growth_tables.fresh_growth_tables``: else the engine does), the clusters whose growth passes it began
    (by name; it finishes them), and the cut clusters whose later ranges' start states its process writes
    (``spark.driver_starts``)."""

    fresh: bool
    clusters: frozenset[str]
    starts: tuple[DriverStarts, ...] = ()


class DriverGrowth:
    """The growth passes of ``request``'s clusters on a thread of the driver, from ``start`` until ``stop``; a pass
    begun goes on after ``stop`` to its end. ``result`` waits for the thread and gives the passes' growth by
    cluster, or raises the first pass's error (a damaged log, say) in the caller's thread. As a context manager:
    stopped and waited for on exit (after a failure or Ctrl-C too: a pass under way ends first, at most one); the
    command hands it to ``spark_session.spark_context`` as its ``meanwhile``, and the engine takes its share
    (``stop`` again) when it plans.

    ``cores``: a local master's (``spark_session.local_cores``); the thread then first plans the start states of
    the ranges ``spark.driver_starts`` plans on them (None: none), which a process of their own writes from when
    the passes begun are done, or from ``stop`` if sooner (beside a pass and the JVM's launch it would slow both);
    the exit ends it if it still runs, its files removed."""

    def __init__(self, request: AnalysisRequest, cores: int | None = None) -> None:
        self.out = request.out
        self.clusters = [(c.name, os.fspath(c.path)) for c in request.clusters]
        self.cores = cores
        self._starts: tuple[DriverStarts, ...] = ()
        self._process: StartsProcess | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._fresh = False
        self._claimed: list[str] = []
        self._found: dict[str, ClusterGrowth] = {}
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="metalog growth passes")

    def __enter__(self) -> DriverGrowth:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self._thread.ident is not None:
            self._thread.join()
        if self._process is not None:
            self._process.close()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> DriverShare:
        """No pass begins from now on; what the driver has taken (the same on every call after the first)."""
        with self._lock:
            self._stopped = True
            if self._process is not None:
                self._process.spawn()
            return DriverShare(self._fresh, frozenset(self._claimed), self._starts)

    def drop_starts(self) -> None:
        """The start states' process ended (the engine takes none of them)."""
        with self._lock:
            if self._process is not None:
                self._process.end()

    def result(self) -> dict[str, ClusterGrowth]:
        """The growth of each cluster whose pass the driver ran, once the thread has ended (``stop`` first, or it
        runs every pass); a pass's error raised here."""
        if self._thread.ident is not None:
            self._thread.join()
        if self._failed:
            raise self._failed[0]
        return dict(self._found)

    def _run(self) -> None:
        try:
            if self.cores is not None:
                with contextlib.suppress(MetalogError, OSError):  # (the engine reads the logs again, and says it)
                    self._start_states(self.cores)
            self._passes()
        finally:
            with self._lock:
                if self._process is not None:
                    self._process.spawn()

    def _passes(self) -> None:
        from metalog.analysis.engines.replay import log_records
        from metalog.analysis.outputs.growth_tables import (
            GROWTH_TABLES,
            GrowthTask,
            fresh_growth_tables,
            growth_task,
            write_cluster_parquet,
        )
        from metalog.analysis.outputs.tables import claim_output

        try:
            with self._lock:
                if self._stopped:
                    return
                claim_output(self.out)  # (before anything in it is made fresh: a directory of the user's is refused)
                fresh_growth_tables(self.out)
                self._fresh = True
            tasks = sorted((GrowthTask(name, path, log_records(path)) for name, path in self.clusters),
                           key=lambda task: -task.weight)  # (the heaviest first: light ones fill the executors)
            for task in tasks:
                with self._lock:
                    if self._stopped:
                        return
                    self._claimed.append(task.name)
                growth = growth_task(task)
                for table in GROWTH_TABLES:
                    write_cluster_parquet(Path(self.out), table, growth)
                self._found[task.name] = growth
        except BaseException as e:  # noqa: BLE001 - raised by ``result``, in the caller's thread
            self._failed.append(e)

    def _start_states(self, cores: int) -> None:
        """The start states ``spark.driver_starts`` plans on ``cores``, written by a process of their own."""
        from metalog.analysis.engines.parallel import log_outline
        from metalog.analysis.engines.spark import ClusterRanges, driver_starts
        from metalog.analysis.engines.spark_starts import StartsProcess

        clusters = []
        for name, path in self.clusters:
            outline = log_outline(path)
            clusters.append(ClusterRanges(str(Path(path).resolve()), name, outline.first, outline.last,
                                          outline.points))
        root = StartsProcess.directory()
        starts = driver_starts(clusters, cores, root)
        paths = {c.name: c.path for c in clusters}
        process = StartsProcess(root, [job for s in starts for job in s.jobs(paths[s.name])])
        with self._lock:
            self._process = process  # (removed on exit, used or not)
            if self._stopped or not starts:
                return
            process.hold()
            self._starts = tuple(starts)
