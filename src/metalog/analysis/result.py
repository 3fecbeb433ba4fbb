"""What an analysis gives, shared by both engines: ``Analysis`` (rows, events, records), and the clusters it names."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import BrokerTables
from metalog.errors import LogError, MetalogError
from metalog.log.files import META_PROPERTIES, read_properties

Progress = Callable[[int, int], None]  # (records replayed, records to replay about)


@dataclass
class Analysis:
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    task_cpu: dict[str, list[float]] = field(default_factory=dict)  # Spark: stage -> CPU seconds per task
    by_broker: BrokerTables = field(default_factory=BrokerTables)  # broker_timeline, directory_timeline, ...


def cluster_name(path: str | os.PathLike[str]) -> str:
    """A cluster's name when none is given: the ``cluster.id`` of its log directory's ``meta.properties`` where
    there is one (what Kafka names the cluster by), else the directory's name as text every output can hold
    (Parquet's UTF-8, CSV, HTML, OpenMetrics): a name that is not UTF-8 (Python holds its bytes as surrogates)
    has each such byte as ``\\xNN``."""
    root = Path(path)
    meta = root / META_PROPERTIES
    if meta.is_file():
        try:
            found = read_properties(meta).get("cluster.id")
        except (OSError, UnicodeDecodeError) as e:
            raise LogError(f"cannot read it: {e}", file=meta) from None
        if found:
            return found
    return os.fsencode(root.resolve().name).decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class ClusterLog:
    """One cluster of an analysis: its name in the tables, and its log directory."""

    name: str
    path: str | os.PathLike[str]


def cluster_log(spec: str | os.PathLike[str]) -> ClusterLog:
    """``NAME=LOGDIR`` (a ``str`` with ``=`` that is not itself an existing path), else a log directory named by
    ``cluster_name``."""
    if isinstance(spec, str) and "=" in spec and not os.path.lexists(spec):
        name, _, path = spec.partition("=")
        if not name or not path:
            raise MetalogError(f"{spec!r}: give a log directory, or NAME=LOGDIR")
        return ClusterLog(name, path)
    return ClusterLog(cluster_name(spec), spec)


def cluster_logs(specs: Sequence[str | os.PathLike[str]]) -> list[ClusterLog]:
    """Each ``cluster_log``; two clusters with one name are refused (the tables would mix their rows)."""
    out: list[ClusterLog] = []
    seen: dict[str, ClusterLog] = {}
    for spec in specs:
        found = cluster_log(spec)
        other = seen.get(found.name)
        if other is not None:
            raise MetalogError(f"two clusters named {found.name!r}: {os.fsdecode(other.path)} and "
                               f"{os.fsdecode(found.path)}; name them apart with NAME=LOGDIR")
        seen[found.name] = found
        out.append(found)
    return out


def cluster_names(specs: Sequence[str | os.PathLike[str]]) -> list[str]:
    return [c.name for c in cluster_logs(specs)]
