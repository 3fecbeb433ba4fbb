"""The broker side of KIP-858: formatted log directories, and reconciling them with the metadata.

``format_log_dirs`` writes each directory's ``meta.properties`` (as ``kafka-storage format``).
``scan_log_dirs`` reads what is on disk; ``plan_reconciliation`` is pure: from the image, a broker
id and that broker's directories it decides, per replica, whether to create the replica's folder,
report its directory to the controller (AssignReplicasToDirs), promote a caught-up future replica,
or leave it. ``apply_plan`` does the folder work and ``assignment_requests`` batches the reports.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from metalog.codec import message_class, struct_class
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.errors import MetalogError
from metalog.log import files
from metalog.state.image import MetadataImage

MAX_ASSIGNMENTS_PER_REQUEST = 2250  # Kafka's AssignmentsManager batch limit
_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<pid>\d+)")
_FUTURE_DIR = re.compile(r"(?P<topic>.+)-(?P<pid>\d+)\.[0-9a-f]{32}-future")


class StorageError(MetalogError):
    """A log directory that cannot be formatted or read."""


# ---- format ------------------------------------------------------------------------------------------
def format_log_dirs(log_dirs: Sequence[str | Path], node_id: int, cluster_id: str,
                    ignore_formatted: bool = False) -> list[tuple[Path, Uuid]]:
    """Write meta.properties (version 1, cluster.id, node.id, a fresh directory.id) into each dir."""
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
    out = []
    for path in paths:
        if path in formatted:
            continue
        path.mkdir(parents=True, exist_ok=True)
        directory_id = Uuid.random()
        files.write_meta_properties(path, cluster_id=cluster_id, node_id=node_id, directory_id=directory_id)
        out.append((path, directory_id))
    return out


# ---- what is on disk ----------------------------------------------------------------------------------
@dataclass
class LogDir:
    """One log directory of the broker as found on disk."""

    path: Path
    id: Uuid
    online: bool = True
    partitions: set[tuple[str, int]] = field(default_factory=set)
    futures: set[tuple[str, int]] = field(default_factory=set)


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


# ---- the plan ----------------------------------------------------------------------------------------
class Act(Enum):
    CREATE = "create"  # make the replica's folder in ``directory``
    REPORT = "report"  # tell the controller the replica is in ``directory``
    PROMOTE = "promote"  # replace the current replica with the caught-up future one in ``directory``


@dataclass(frozen=True)
class Action:
    act: Act
    topic: str
    partition: int
    topic_id: Uuid
    directory: Uuid


def plan_reconciliation(image: MetadataImage, broker_id: int, dirs: Sequence[LogDir]) -> list[Action]:
    """The actions that bring the broker's directories and the metadata's assignments together."""
    online = [d for d in dirs if d.online]
    by_id = {d.id: d for d in dirs}
    any_offline = len(online) != len(dirs)
    load = {d.id: len(d.partitions) for d in online}
    actions: list[Action] = []

    def place(topic: str, pid: int, tid: Uuid) -> None:
        if not online:
            return
        target = min(online, key=lambda d: load[d.id]).id  # least loaded; ties: the order given
        load[target] += 1
        actions.extend([Action(Act.CREATE, topic, pid, tid, target), Action(Act.REPORT, topic, pid, tid, target)])

    for name in sorted(image.topics_by_name):
        topic = image.topics_by_name[name]
        for pid in sorted(topic.partitions):
            part = topic.partitions[pid]
            if broker_id not in part.replicas:
                continue
            assigned = part.directory(broker_id)
            found = next((d.id for d in online if (name, pid) in d.partitions), None)
            if assigned == UNASSIGNED:
                if found is not None:
                    actions.append(Action(Act.REPORT, name, pid, topic.id, found))
                else:
                    place(name, pid, topic.id)
            elif assigned in by_id and by_id[assigned].online:
                target = by_id[assigned]
                if (name, pid) in target.partitions:
                    continue
                if found is None:
                    actions.append(Action(Act.CREATE, name, pid, topic.id, assigned))
                elif (name, pid) in target.futures:
                    actions.append(Action(Act.PROMOTE, name, pid, topic.id, assigned))
                else:
                    actions.append(Action(Act.REPORT, name, pid, topic.id, found))
            elif assigned == MIGRATING:
                if found is not None:
                    actions.append(Action(Act.REPORT, name, pid, topic.id, found))
                elif any_offline:
                    actions.append(Action(Act.REPORT, name, pid, topic.id, LOST))
                else:
                    place(name, pid, topic.id)
            elif found is not None:  # LOST or a directory this broker does not have online, yet here it is
                actions.append(Action(Act.REPORT, name, pid, topic.id, found))
            elif not any_offline:
                place(name, pid, topic.id)
    return actions


def mismatching_assignments(image: MetadataImage, broker_id: int, dirs: Sequence[LogDir]) -> int:
    """NumMismatchingReplicaToLogDirAssignments: hosted replicas whose metadata assignment is missing
    (a reserved id) or names another directory."""
    count = 0
    for d in dirs:
        if not d.online:
            continue
        for name, pid in d.partitions:
            topic = image.topics_by_name.get(name)
            part = topic.partitions.get(pid) if topic else None
            if part is None or broker_id not in part.replicas:
                continue  # not a replica the metadata gives this broker: deletion's business, not assignment's
            if part.directory(broker_id) != d.id:
                count += 1
    return count


def wants_fence(image: MetadataImage, broker_id: int, dirs: Sequence[LogDir]) -> bool:
    """A broker with several log dirs stays fenced while any assignment mismatches."""
    return len(dirs) > 1 and mismatching_assignments(image, broker_id, dirs) > 0


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


def assignment_requests(broker_id: int, broker_epoch: int, reports: Sequence[Action],
                        limit: int = MAX_ASSIGNMENTS_PER_REQUEST) -> list[Any]:
    """AssignReplicasToDirsRequests of at most ``limit`` assignments each, grouped by directory and topic."""
    cls = message_class("AssignReplicasToDirsRequest")
    DirectoryData, TopicData, PartitionData = (  # noqa: N806 - Kafka's struct names
        struct_class(cls.NAME, s) for s in ("DirectoryData", "TopicData", "PartitionData"))
    out = []
    for start in range(0, len(reports), limit):
        grouped: dict[Uuid, dict[Uuid, list[int]]] = {}
        for a in reports[start:start + limit]:
            grouped.setdefault(a.directory, {}).setdefault(a.topic_id, []).append(a.partition)
        out.append(cls(broker_id=broker_id, broker_epoch=broker_epoch, directories=[
            DirectoryData(id=d, topics=[
                TopicData(topic_id=t, partitions=[PartitionData(partition_index=p) for p in ps])
                for t, ps in topics.items()]) for d, topics in grouped.items()]))
    return out
