"""What an analysis gives, shared by both engines: ``Analysis`` (rows, events, records) and cluster names."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.analysis.brokers import BrokerTables

Progress = Callable[[int, int], None]  # (records replayed, records to replay about)


@dataclass
class Analysis:
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    task_cpu: dict[str, list[float]] = field(default_factory=dict)  # Spark: stage -> CPU seconds per task
    by_broker: BrokerTables = field(default_factory=BrokerTables)  # broker_timeline, directory_timeline, ...


def cluster_name(path: str | os.PathLike[str]) -> str:
    """The log directory's name as text every output can hold (Parquet's UTF-8, CSV, HTML, OpenMetrics): a name
    that is not UTF-8 (Python holds its bytes as surrogates) has each such byte as ``\\xNN``."""
    return os.fsencode(Path(path).resolve().name).decode("utf-8", "backslashreplace")


def cluster_names(logdirs: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Directory names, made unique with a suffix when two clusters share one."""
    names: list[str] = []
    for p in logdirs:
        name = cluster_name(p)
        while name in names:
            name += "'"
        names.append(name)
    return names
