"""What every engine takes and gives: an ``AnalysisRequest`` in, the tables on disk and an ``AnalysisSummary``
out (``Engine``). The python engine replays each cluster in this process, the parallel one replays offset
ranges of each cluster (in this process: the algorithm Spark distributes), Spark runs those ranges on its
executors; all three write the same files, byte for byte."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from metalog.analysis.clusters import ClusterLog, cluster_logs

Progress = Callable[[int, int], None]  # (records done, records to do), within the stage
Stage = Callable[[str], None]  # a stage starts (its name)



class ClusterWork(Protocol):
    """A task of ``Engine.run``: a cluster's (its name), and how heavy it is (the heaviest start first)."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int: ...


T = TypeVar("T", bound=ClusterWork)
R = TypeVar("R")


@dataclass(frozen=True)
class AnalysisRequest:
    """An analysis to run: the clusters (in fleet order), the output directory (the analysis' own:
    ``tables.claim_output``), ``timeline_buckets``' width, whether to write the CSV tables too, and whether
    controller_metrics.om has a sample at every batch time."""

    out: Path
    clusters: tuple[ClusterLog, ...]
    bucket_ms: int = 60_000
    csv: bool = False
    metrics_every_batch: bool = False

    @classmethod
    def of(cls, logdirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *, bucket_ms: int = 60_000,
           csv: bool = False, metrics_every_batch: bool = False) -> AnalysisRequest:
        """A request for log directories or ``NAME=LOGDIR`` (``result.cluster_logs``: two clusters with one
        name are refused)."""
        return cls(Path(out), tuple(cluster_logs(logdirs)), bucket_ms, csv, metrics_every_batch)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.clusters]


@dataclass(frozen=True)
class AnalysisSummary:
    """What an engine did: the data records it replayed, the timeline's rows (batches) and the events of the
    fleet, and every path it wrote in ``out``, in order (the tables' directories, the CSV tables,
    controller_metrics.om, the growth tables). ``task_cpu``: each stage's CPU seconds per task, where the engine
    runs tasks (Spark)."""

    out: Path
    clusters: tuple[str, ...]
    records: int
    batches: int
    events: int
    paths: tuple[Path, ...]
    task_cpu: Mapping[str, Sequence[float]] = field(default_factory=dict)


class Engine(Protocol):
    """An engine: ``analyze`` writes a request's tables and says what it did; ``run`` runs independent tasks
    (a cluster each: the report's reading) where the engine runs its own, results in order."""

    name: str

    @property
    def cores(self) -> int:
        """How many of ``run``'s tasks run at once."""
        ...

    def analyze(self, request: AnalysisRequest, progress: Progress | None = None,
                stage: Stage | None = None) -> AnalysisSummary: ...

    def run(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...


def here(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """Tasks run in this process, one after another."""
    return [fn(item) for item in items]
