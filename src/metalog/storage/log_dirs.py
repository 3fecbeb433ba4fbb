"""A broker's log directories on disk: formatted (as ``kafka-storage format``), read, and changed to follow a
reconciliation plan (``metalog.controller.broker.plan_reconciliation``, which is pure).

``format_log_dirs`` writes each directory's ``meta.properties``; ``scan_log_dirs`` reads each directory's id
and its replica folders; ``apply_plan`` creates and promotes folders and returns the reports to send.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from metalog.codec.uuid import Uuid
from metalog.controller.broker import Act, Action, LogDir
from metalog.errors import StorageError
from metalog.log import files
from metalog.snapshots.bootstrap import BOOTSTRAP_FILE, write_bootstrap

if TYPE_CHECKING:
    from metalog.codec.runtime import ApiMessage

_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<pid>\d+)")
_FUTURE_DIR = re.compile(r"(?P<topic>.+)-(?P<pid>\d+)\.[0-9a-f]{32}-future")


# ---- format ------------------------------------------------------------------------------------------
def format_log_dirs(log_dirs: Sequence[str | Path], node_id: int, cluster_id: str,
                    ignore_formatted: bool = False,
                    bootstrap: Sequence[tuple[ApiMessage, int]] | None = None) -> list[tuple[Path, Uuid]]:
    """Write meta.properties (version 1, cluster.id, node.id, a fresh directory.id) into each dir, and with
    ``bootstrap`` (its records) a bootstrap.checkpoint first, as Kafka's Formatter does."""
    paths = [Path(d) for d in log_dirs]
    if not paths:
        raise StorageError("no log directories given")
    if len({p.resolve() for p in paths}) != len(paths):
        raise StorageError(f"a log directory is given twice: {', '.join(map(str, paths))}")
    try:
        Uuid.parse(cluster_id)
    except ValueError:
        raise StorageError(f"cluster id {cluster_id!r} is not a Kafka Uuid (22 characters of url-safe base64)") \
            from None
    formatted = [p for p in paths if (p / files.META_PROPERTIES).exists()]
    if formatted and not ignore_formatted:  # checked before writing anything: all or nothing
        raise StorageError(f"Log directory {formatted[0]} is already formatted. Use --ignore-formatted to skip it.")
    stale = [p for p in paths if p not in formatted and (p / BOOTSTRAP_FILE).exists()]
    if bootstrap is not None and stale:  # Kafka would replace it; a file metalog did not write is left alone
        raise StorageError(f"{stale[0] / BOOTSTRAP_FILE} exists in a directory that is not formatted; remove it "
                           "first if it is not needed")
    out = []
    for path in paths:
        if path in formatted:
            continue
        path.mkdir(parents=True, exist_ok=True)
        if bootstrap is not None:
            write_bootstrap(path, bootstrap)
        directory_id = Uuid.random()
        files.write_meta_properties(path, cluster_id=cluster_id, node_id=node_id, directory_id=directory_id)
        out.append((path, directory_id))
    return out


# ---- what is on disk ----------------------------------------------------------------------------------
def scan_log_dirs(paths: Iterable[str | Path], offline: Iterable[str | Path] = ()) -> list[LogDir]:
    """Read each directory's id and replica folders; an ``offline`` directory is listed, not read."""
    down = {Path(p).resolve() for p in offline}
    dirs = []
    for p in map(Path, paths):
        props = files.read_properties(p / files.META_PROPERTIES)
        if "directory.id" not in props:
            raise StorageError(f"{p / files.META_PROPERTIES} has no directory.id (format it with metalog format)")
        d = LogDir(p, Uuid.parse(props["directory.id"]), online=p.resolve() not in down)
        if d.online:
            for child in p.iterdir():
                if not child.is_dir():
                    continue
                future = _FUTURE_DIR.fullmatch(child.name)
                if future:
                    d.futures.add((future["topic"], int(future["pid"])))
                    continue
                m = _PARTITION_DIR.fullmatch(child.name)
                if m:
                    d.partitions.add((m["topic"], int(m["pid"])))
        dirs.append(d)
    return dirs


# ---- doing it ----------------------------------------------------------------------------------------
def apply_plan(actions: Iterable[Action], dirs: Sequence[LogDir]) -> list[Action]:
    """Create and promote folders; returns the reports to send."""
    by_id = {d.id: d for d in dirs}
    reports = []
    for a in actions:
        if a.act is Act.REPORT:
            reports.append(a)
            continue
        d = by_id[a.directory]
        folder = d.path / f"{a.topic}-{a.partition}"
        if a.act is Act.CREATE:
            folder.mkdir(exist_ok=True)
            d.partitions.add((a.topic, a.partition))
        else:
            _promote(a, dirs, d)
    return reports


def _promote(a: Action, dirs: Sequence[LogDir], target: LogDir) -> None:
    key = (a.topic, a.partition)
    for d in dirs:
        if d is not target and key in d.partitions:
            shutil.rmtree(d.path / f"{a.topic}-{a.partition}")
            d.partitions.discard(key)
    future = next(c for c in target.path.iterdir() if (m := _FUTURE_DIR.fullmatch(c.name))
                  and (m["topic"], int(m["pid"])) == key)
    future.rename(target.path / f"{a.topic}-{a.partition}")
    target.futures.discard(key)
    target.partitions.add(key)
