"""The clusters of an analysis: how each is named (``cluster.id``, ``NAME=LOGDIR``, the directory's name)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from metalog.errors import LogError, MetalogError
from metalog.log.files import META_PROPERTIES, read_properties


def cluster_name(path: str | os.PathLike[str]) -> str:
    """A cluster's name when none is given: the ``cluster.id`` of its log directory's ``meta.properties`` where
    there is one (what Kafka names the cluster by), else the directory's name as text every output can hold
    (``as_text``)."""
    root = Path(path)
    meta = root / META_PROPERTIES
    if meta.is_file():
        try:
            found = read_properties(meta).get("cluster.id")
        except (OSError, UnicodeDecodeError) as e:
            raise LogError(f"cannot read it: {e}", file=meta) from None
        if found:
            return found
    return as_text(root.resolve().name)


def as_text(name: str) -> str:
    """``name`` as text every output can hold (Parquet's UTF-8, CSV, HTML, OpenMetrics): each byte of it that is
    not UTF-8 (which Python holds as a surrogate, from a file name or a command line) as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class ClusterLog:
    """One cluster of an analysis: its name in the tables, and its log directory."""

    name: str
    path: str | os.PathLike[str]


def cluster_log(spec: str | os.PathLike[str]) -> ClusterLog:
    """``NAME=LOGDIR`` (a ``str`` with ``=`` that is not itself an existing path; NAME ``as_text``), else a log
    directory named by ``cluster_name``."""
    if isinstance(spec, str) and "=" in spec and not os.path.lexists(spec):
        name, _, path = spec.partition("=")
        if not name or not path:
            raise MetalogError(f"{spec!r}: give a log directory, or NAME=LOGDIR")
        return ClusterLog(as_text(name), path)
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
