"""The rows of broker_timeline, directory_timeline and directory_failures of an analysis kept in memory (the
step that makes them is ``metalog.analysis.domain.step``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class BrokerTables:
    """Rows of broker_timeline, directory_timeline and directory_failures (dicts in their columns' order)."""

    brokers: list[dict[str, Any]] = field(default_factory=list)
    directories: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def extend(self, other: BrokerTables) -> None:
        """Another cluster's (or range's) tables after these."""
        self.brokers += other.brokers
        self.directories += other.directories
        self.failures += other.failures
