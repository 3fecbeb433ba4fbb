"""What the Spark engine's driver does while its JVM starts: on a local master, it plans the start states of a cut
cluster's later ranges and starts the process that writes them (``spark_starts``).

The JVM's launch and the SparkContext's start take 1.5-2 s of wall, in which the driver only waits and one of two
cores idles; the executors' first task begins later still. ``MeanwhileStarts`` plans on a thread as the launch begins
(``spark_session.Meanwhile``: ``start`` as the launch begins, ``stop`` as it ends, before the SparkContext's start,
whose calls into the JVM the thread would slow) and starts the process as soon as its plan is made. (It ran the
clusters' growth passes there too, a scan of each log, until the range tasks counted their growth from their
replay's own scan: ``spark_tables.replay_task``.)
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from metalog.analysis.engines.request import AnalysisRequest
from metalog.errors import MetalogError

if TYPE_CHECKING:
    from metalog.analysis.engines.spark import DriverStarts
    from metalog.analysis.engines.spark_starts import StartsProcess

__all__ = ["MeanwhileStarts"]


class MeanwhileStarts:
    """The start states ``spark.driver_starts`` plans on a local master's ``cores`` for ``request``'s clusters,
    planned on a thread of the driver from ``start`` and written by a process of their own (``StartsProcess``),
    started as the plan is made; ``stop`` gives the plan (none if the thread had not made it by then: the engine
    plans without). As a context manager: the thread waited for on exit, the process ended if it still runs and its
    files removed. ``drop`` ends the process (the engine takes none of them)."""

    def __init__(self, request: AnalysisRequest, cores: int | None = None) -> None:
        self.clusters = [(c.name, os.fspath(c.path)) for c in request.clusters]
        self.cores = cores
        self._starts: tuple[DriverStarts, ...] = ()
        self._process: StartsProcess | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="metalog start states")

    def __enter__(self) -> MeanwhileStarts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.join()
        if self._process is not None:
            self._process.close()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> tuple[DriverStarts, ...]:
        """The start states planned by now, whose process runs (the same on every call after the first)."""
        with self._lock:
            self._stopped = True
            return self._starts

    def join(self) -> None:
        """Once the thread has ended: its plan made, and its process started."""
        if self._thread.ident is not None:
            self._thread.join()

    def drop(self) -> None:
        """The start states' process ended (the engine takes none of them)."""
        with self._lock:
            if self._process is not None:
                self._process.end()

    def _run(self) -> None:
        if self.cores is None:
            return
        with contextlib.suppress(MetalogError, OSError):  # (the engine reads the logs again, and says it)
            self._start_states(self.cores)

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
            process.spawn()
