"""The broker side of KIP-858: reconciling a broker's log directories with the metadata. Pure.

``plan_reconciliation``, from the image, a broker id and that broker's directories as found on disk
(``metalog.storage.log_dirs.scan_log_dirs`` reads them), decides per replica whether to create the replica's
folder, report its directory to the controller (AssignReplicasToDirs), promote a caught-up future replica, or
leave it; ``assignment_requests`` batches the reports. ``metalog.storage.log_dirs`` formats directories and
does the folder work (``apply_plan``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from metalog.codec.messages import AssignReplicasToDirsRequest
from metalog.codec.messages.assign_replicas_to_dirs_request import DirectoryData, PartitionData, TopicData
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.state.image import MetadataImage

if TYPE_CHECKING:
    from pathlib import Path

MAX_ASSIGNMENTS_PER_REQUEST = 2250  # Kafka's AssignmentsManager batch limit


# ---- what is on disk ----------------------------------------------------------------------------------
@dataclass
class LogDir:
    """One log directory of the broker as found on disk (``metalog.storage.log_dirs.scan_log_dirs``)."""

    path: Path
    id: Uuid
    online: bool = True
    partitions: set[tuple[str, int]] = field(default_factory=set)
    futures: set[tuple[str, int]] = field(default_factory=set)


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
    plan = _Reconciliation(dirs)
    for name in sorted(image.topics_by_name):
        topic = image.topics_by_name[name]
        for pid in sorted(topic.partitions):
            part = topic.partitions[pid]
            if broker_id in part.replicas:
                plan.replica(name, pid, topic.id, part.directory(broker_id))
    return plan.actions


class _Reconciliation:
    """``plan_reconciliation``'s actions, a hosted replica at a time, and the load it puts on each directory."""

    def __init__(self, dirs: Sequence[LogDir]) -> None:
        self.online = [d for d in dirs if d.online]
        self.by_id = {d.id: d for d in dirs}
        self.any_offline = len(self.online) != len(dirs)
        self.load = {d.id: len(d.partitions) for d in self.online}
        self.actions: list[Action] = []

    def replica(self, name: str, pid: int, tid: Uuid, assigned: Uuid) -> None:
        found = next((d.id for d in self.online if (name, pid) in d.partitions), None)
        if assigned == UNASSIGNED:
            self._found_or_placed(name, pid, tid, found)
        elif assigned in self.by_id and self.by_id[assigned].online:
            self._in_its_directory(name, pid, tid, assigned, found)
        elif assigned == MIGRATING:
            self._migrating(name, pid, tid, found)
        elif found is not None:  # LOST or a directory this broker does not have online, yet here it is
            self.actions.append(Action(Act.REPORT, name, pid, tid, found))
        elif not self.any_offline:
            self._place(name, pid, tid)

    def _found_or_placed(self, name: str, pid: int, tid: Uuid, found: Uuid | None) -> None:
        if found is not None:
            self.actions.append(Action(Act.REPORT, name, pid, tid, found))
        else:
            self._place(name, pid, tid)

    def _in_its_directory(self, name: str, pid: int, tid: Uuid, assigned: Uuid, found: Uuid | None) -> None:
        target = self.by_id[assigned]
        if (name, pid) in target.partitions:
            return
        if found is None:
            self.actions.append(Action(Act.CREATE, name, pid, tid, assigned))
        elif (name, pid) in target.futures:
            self.actions.append(Action(Act.PROMOTE, name, pid, tid, assigned))
        else:
            self.actions.append(Action(Act.REPORT, name, pid, tid, found))

    def _migrating(self, name: str, pid: int, tid: Uuid, found: Uuid | None) -> None:
        if found is None and self.any_offline:
            self.actions.append(Action(Act.REPORT, name, pid, tid, LOST))
        else:
            self._found_or_placed(name, pid, tid, found)

    def _place(self, name: str, pid: int, tid: Uuid) -> None:
        if not self.online:
            return
        target = min(self.online, key=lambda d: self.load[d.id]).id  # least loaded; ties: the order given
        self.load[target] += 1
        self.actions.extend([Action(Act.CREATE, name, pid, tid, target), Action(Act.REPORT, name, pid, tid, target)])


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


# ---- the reports ------------------------------------------------------------------------------------------
def assignment_requests(broker_id: int, broker_epoch: int, reports: Sequence[Action],
                        limit: int = MAX_ASSIGNMENTS_PER_REQUEST) -> list[AssignReplicasToDirsRequest]:
    """AssignReplicasToDirsRequests of at most ``limit`` assignments each, grouped by directory and topic."""
    out = []
    for start in range(0, len(reports), limit):
        grouped: dict[Uuid, dict[Uuid, list[int]]] = {}
        for a in reports[start:start + limit]:
            grouped.setdefault(a.directory, {}).setdefault(a.topic_id, []).append(a.partition)
        out.append(AssignReplicasToDirsRequest(broker_id=broker_id, broker_epoch=broker_epoch, directories=[
            DirectoryData(id=d, topics=[
                TopicData(topic_id=t, partitions=[PartitionData(partition_index=p) for p in ps])
                for t, ps in topics.items()]) for d, topics in grouped.items()]))
    return out
