"""The broker side of KIP-858 on real temporary directories: format, the reconciliation planner's
decision table (every row), the mismatch metric, and AssignReplicasToDirs batching."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.codec import message_class
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, Uuid
from metalog.controller.broker import (
    Act,
    Action,
    LogDir,
    assignment_requests,
    mismatching_assignments,
    plan_reconciliation,
    wants_fence,
)
from metalog.errors import StorageError
from metalog.log import files
from metalog.state.delta import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage
from metalog.storage.log_dirs import apply_plan, format_log_dirs, scan_log_dirs
from tests.controller.helpers import CLUSTER_ID

TID = Uuid.of(5, 5)
ELSEWHERE = Uuid.of(0x7777, 1)  # a directory id this broker does not have


def test_format_writes_meta_properties(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    done = format_log_dirs(dirs, 4, CLUSTER_ID)
    ids = [u for _, u in done]
    assert len(set(ids)) == 3 and not any(u.is_reserved for u in ids)
    for d, u in done:
        props = files.read_properties(d / "meta.properties")
        assert props == {"version": "1", "cluster.id": CLUSTER_ID, "node.id": "4", "directory.id": str(u)}
    assert [d.id for d in scan_log_dirs(dirs)] == ids


def test_format_refuses_formatted_dirs_before_writing_any(tmp_path: Path) -> None:
    format_log_dirs([tmp_path / "a"], 1, CLUSTER_ID)
    with pytest.raises(StorageError, match="already formatted"):
        format_log_dirs([tmp_path / "b", tmp_path / "a"], 1, CLUSTER_ID)
    assert not (tmp_path / "b" / "meta.properties").exists()
    (path, _), = format_log_dirs([tmp_path / "b", tmp_path / "a"], 1, CLUSTER_ID, ignore_formatted=True)
    assert path == tmp_path / "b"


@pytest.mark.parametrize(("dirs", "cluster_id", "message"), [
    ([], CLUSTER_ID, "no log directories"), (["x", "x"], CLUSTER_ID, "given twice"),
    (["x"], "nope", "not a Kafka Uuid")])
def test_format_errors(tmp_path: Path, dirs: list[str], cluster_id: str, message: str) -> None:
    with pytest.raises(StorageError, match=message):
        format_log_dirs([tmp_path / d for d in dirs], 1, cluster_id)


# ---- the decision table ------------------------------------------------------------------------------
def image_with(directory: Uuid, broker: int = 1) -> MetadataImage:
    delta = MetadataDelta(EMPTY)
    delta.replay(message_class("TopicRecord")(name="foo", topic_id=TID))
    delta.replay(message_class("PartitionRecord")(
        partition_id=0, topic_id=TID, replicas=[broker, 9], isr=[broker, 9], leader=broker, removing_replicas=[],
        adding_replicas=[], directories=[directory, UNASSIGNED]))
    return delta.apply()


@pytest.fixture()
def disks(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / n for n in ("d0", "d1", "d2")]
    format_log_dirs(paths, 1, CLUSTER_ID)
    return paths


def ids(paths: list[Path]) -> list[Uuid]:
    return [d.id for d in scan_log_dirs(paths)]


def put(path: Path, name: str = "foo-0") -> None:
    (path / name).mkdir()


# Each row: (assignment: "UNASSIGNED" | "MIGRATING" | "LOST" | "ELSEWHERE" | "d<i>" | "offline d<i>",
#            where the replica is on disk ("" none, "d<i>", "future d<i>+d<j>"), offline dir index or None,
#            expected actions as (act, dir) with dir a name or a reserved id)
ROWS = [
    ("unassigned, exists -> report actual", "UNASSIGNED", "d2", None, [("report", "d2")]),
    ("unassigned, missing -> least loaded, create, report", "UNASSIGNED", "", None,
     [("create", "d1"), ("report", "d1")]),
    ("unassigned, missing, a dir offline -> still placed", "UNASSIGNED", "", 1, [("create", "d2"), ("report", "d2")]),
    ("online dir, missing -> create there", "d2", "", None, [("create", "d2")]),
    ("online dir, present there -> nothing", "d2", "d2", None, []),
    ("online dir, future there caught up -> promote", "d2", "d0+future d2", None, [("promote", "d2")]),
    ("online dir, present in another online dir -> report actual", "d2", "d1", None, [("report", "d1")]),
    ("migrating, found -> report", "MIGRATING", "d0", None, [("report", "d0")]),
    ("migrating, missing, none offline -> choose, create, report", "MIGRATING", "", None,
     [("create", "d1"), ("report", "d1")]),
    ("migrating, missing, a dir offline -> report LOST", "MIGRATING", "", 2, [("report", "LOST")]),
    ("lost, a dir offline -> nothing", "LOST", "", 0, []),
    ("lost, none offline -> choose, create, report", "LOST", "", None, [("create", "d1"), ("report", "d1")]),
    ("unknown dir, a dir offline -> nothing", "ELSEWHERE", "", 0, []),
    ("unknown dir, none offline -> choose, create, report", "ELSEWHERE", "", None,
     [("create", "d1"), ("report", "d1")]),
    ("assigned to a dir now offline -> nothing", "d1", "", 1, []),
    ("lost, but found online -> report actual", "LOST", "d2", None, [("report", "d2")]),
]


@pytest.mark.parametrize(("assignment", "on_disk", "offline", "expected"), [r[1:] for r in ROWS],
                         ids=[r[0] for r in ROWS])
def test_planner_decision_table(disks: list[Path], assignment: str, on_disk: str, offline: int | None,
                                expected: list[tuple[str, str]]) -> None:
    dir_ids = ids(disks)
    named = {"UNASSIGNED": UNASSIGNED, "MIGRATING": MIGRATING, "LOST": LOST, "ELSEWHERE": ELSEWHERE}
    named.update({f"d{i}": u for i, u in enumerate(dir_ids)})
    put(disks[0], "bar-0")  # d0 is the most loaded, so "least loaded" means d1
    for part in filter(None, on_disk.split("+")):
        if part.startswith("future "):
            put(disks[int(part[-1])], f"foo-0.{'ab' * 16}-future")
        else:
            put(disks[int(part[-1])])
    dirs = scan_log_dirs(disks, offline=[disks[offline]] if offline is not None else [])
    actions = plan_reconciliation(image_with(named[assignment]), 1, dirs)
    back = {u: n for n, u in named.items()}
    assert [(a.act.value, back[a.directory]) for a in actions] == expected
    assert all((a.topic, a.partition, a.topic_id) == ("foo", 0, TID) for a in actions)
    reports = apply_plan(actions, dirs)
    for a in actions:
        if a.act in (Act.CREATE, Act.PROMOTE):
            assert (disks[dir_ids.index(a.directory)] / "foo-0").is_dir()
    if any(a.act is Act.PROMOTE for a in actions):
        assert not (disks[0] / "foo-0").exists() and not list(disks[2].glob("*-future"))
    assert reports == [a for a in actions if a.act is Act.REPORT]


def test_replicas_of_other_brokers_are_not_touched(disks: list[Path]) -> None:
    dirs = scan_log_dirs(disks)
    assert plan_reconciliation(image_with(UNASSIGNED, broker=3), 1, dirs) == []


def test_least_loaded_counts_the_plans_own_creations(disks: list[Path]) -> None:
    delta = MetadataDelta(EMPTY)
    delta.replay(message_class("TopicRecord")(name="foo", topic_id=TID))
    for pid in range(6):
        delta.replay(message_class("PartitionRecord")(partition_id=pid, topic_id=TID, replicas=[1], isr=[1],
                                                      leader=1, removing_replicas=[], adding_replicas=[],
                                                      directories=[UNASSIGNED]))
    actions = plan_reconciliation(delta.apply(), 1, scan_log_dirs(disks))
    created = [a.directory for a in actions if a.act is Act.CREATE]
    assert sorted(created.count(u) for u in ids(disks)) == [2, 2, 2]


# ---- the metric, fencing, batching --------------------------------------------------------------------
def test_mismatch_metric_and_fencing(disks: list[Path]) -> None:
    d = ids(disks)
    put(disks[1])
    dirs = scan_log_dirs(disks)
    assert mismatching_assignments(image_with(UNASSIGNED), 1, dirs) == 1
    assert mismatching_assignments(image_with(d[2]), 1, dirs) == 1
    assert mismatching_assignments(image_with(d[1]), 1, dirs) == 0
    assert mismatching_assignments(image_with(UNASSIGNED, broker=3), 1, dirs) == 0  # not our replica
    assert wants_fence(image_with(UNASSIGNED), 1, dirs) and not wants_fence(image_with(d[1]), 1, dirs)
    single = scan_log_dirs(disks[1:2])
    assert mismatching_assignments(image_with(UNASSIGNED), 1, single) == 1
    assert not wants_fence(image_with(UNASSIGNED), 1, single)  # one log dir: no need to wait


def test_assignment_requests_hold_at_most_2250() -> None:
    d1, d2 = Uuid.of(9, 1), Uuid.of(9, 2)
    reports = [Action(Act.REPORT, "t", p, TID, d1 if p % 2 else d2) for p in range(4501)]
    reqs = assignment_requests(3, 42, reports)
    sizes = [sum(len(t.partitions) for d in r.directories for t in d.topics) for r in reqs]
    assert sizes == [2250, 2250, 1]
    assert all((r.broker_id, r.broker_epoch) == (3, 42) for r in reqs)
    got = sorted((d.id, p.partition_index) for r in reqs for d in r.directories for t in d.topics
                 for p in t.partitions)
    assert got == sorted((a.directory, a.partition) for a in reports)
    assert reqs[0].encode(0)  # a valid message
    assert assignment_requests(3, 42, []) == []


def test_scan_needs_a_directory_id(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    files.write_meta_properties(tmp_path / "x", cluster_id=CLUSTER_ID, node_id=1, directory_id=None)
    with pytest.raises(StorageError, match="no directory.id"):
        scan_log_dirs([tmp_path / "x"])
    assert LogDir(tmp_path, Uuid.of(1, 1)).online
