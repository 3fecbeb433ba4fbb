"""``metalog history``'s changes are exactly the differences between consecutive published states.

The published states come from ``MetadataHistory.state_at`` at every offset (the points Kafka's loader publishes:
metadata/src/main/java/org/apache/kafka/image/loader/MetadataBatchLoader.java); the differences are computed here
from the images, field by field, independently of ``metalog.replay.subjects``' views.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import Uuid, message_class, struct_class
from metalog.codec.framing import encode_metadata_record
from metalog.errors import PointError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.replay.changes import changes, render
from metalog.replay.history import MetadataHistory
from metalog.replay.subjects import BrokerSubject, ConfigSubject, ControllerSubject, FeaturesSubject, TopicSubject
from metalog.state import enums as V
from metalog.state.image import EMPTY, MetadataImage

TS = 1_700_000_000_000
CONTROL = "control"
DIRS = [Uuid.of(9, i) for i in range(1, 5)]
NAMES = ["foo", "bar"]
BROKERS = [1, 2, 3]


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def write(root: Path, batches: list[Any]) -> Path:
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(segment_bytes=600, durability=Durability.NONE)) as log:
        for n, batch in enumerate(batches):
            if batch == CONTROL:
                log.append_control([(rec("LeaderChangeMessage", leader_id=3000 + n % 2, voters=[]), 0)],
                                   epoch=1 + n, timestamp=TS + n * 1000)
            else:
                values = [encode_metadata_record(r, v) for r, v in batch]
                log.append_batch(build_data_batch(0, values, epoch=1 + n, timestamp=TS + n * 1000))
    return root


# ---- random valid histories -------------------------------------------------------------------------------------
class Model:
    """Just enough of the state to write records that apply (a transaction's records are dropped on abort)."""

    def __init__(self) -> None:
        self.brokers: dict[int, int] = {}  # id -> epoch
        self.topics: dict[str, tuple[Uuid, dict[int, list[int]]]] = {}  # name -> (id, partition -> replicas)
        self.ids = 0


Records = list[tuple[Any, int]]  # (record, its version)
_BROKER_OPS = ("fence", "change_broker", "unregister")
_TOPIC_OPS = ("remove", "partition")


def _op(draw: st.DrawFn, m: Model) -> Records:
    """One random step that applies: an op on a broker or a topic that does not exist registers or creates it."""
    op = draw(st.sampled_from(["register", "fence", "change_broker", "unregister", "topic", "remove", "partition",
                               "partition", "partition", "config", "controller", "feature", "noop"]))
    b = draw(st.sampled_from(BROKERS))
    if op == "register" or (op in _BROKER_OPS and b not in m.brokers):
        return _register(draw, m, b)
    if op in _BROKER_OPS:
        return _BROKER_STEPS[op](draw, m, b)
    name = draw(st.sampled_from(NAMES))
    if op == "topic" or (op in _TOPIC_OPS and name not in m.topics):
        return _topic(draw, m, name)
    if op == "remove":
        tid, _ = m.topics.pop(name)
        return [(rec("RemoveTopicRecord", topic_id=tid), 0)]
    if op == "partition":
        return _partition_change(draw, m, name)
    return _OTHER_STEPS[op](draw)


def _register(draw: st.DrawFn, m: Model, b: int) -> Records:
    m.brokers[b] = m.brokers.get(b, 0) + draw(st.integers(1, 2))
    return [(rec("RegisterBrokerRecord", broker_id=b, broker_epoch=m.brokers[b], incarnation_id=Uuid.of(b, 1),
                 log_dirs=draw(st.lists(st.sampled_from(DIRS), max_size=2, unique=True)), fenced=True,
                 rack=draw(st.sampled_from([None, "r1"])),
                 end_points=[struct_class("RegisterBrokerRecord", "BrokerEndpoint")(
                     name="PLAINTEXT", host=f"b{b}", port=9092 + draw(st.integers(0, 1)), security_protocol=0)]),
             3)]


def _fence(draw: st.DrawFn, m: Model, b: int) -> Records:
    return [(rec(draw(st.sampled_from(["FenceBrokerRecord", "UnfenceBrokerRecord"])), id=b, epoch=m.brokers[b]), 0)]


def _change_broker(draw: st.DrawFn, m: Model, b: int) -> Records:
    return [(rec("BrokerRegistrationChangeRecord", broker_id=b, broker_epoch=m.brokers[b],
                 fenced=draw(st.sampled_from([-1, 0, 1])), in_controlled_shutdown=draw(st.sampled_from([0, 1])),
                 log_dirs=draw(st.lists(st.sampled_from(DIRS), max_size=2, unique=True))), 2)]


def _unregister(draw: st.DrawFn, m: Model, b: int) -> Records:
    epoch = m.brokers.pop(b)
    return [(rec("UnregisterBrokerRecord", broker_id=b, broker_epoch=epoch), 0)]


_BROKER_STEPS = {"fence": _fence, "change_broker": _change_broker, "unregister": _unregister}


def _topic(draw: st.DrawFn, m: Model, name: str) -> Records:
    m.ids += 1
    tid = Uuid.of(100, m.ids)
    out: Records = [(rec("TopicRecord", name=name, topic_id=tid), 0)]
    parts = {}
    if name in m.topics:  # a TopicRecord for a name that exists: the name now means the new topic
        out = [(rec("RemoveTopicRecord", topic_id=m.topics[name][0]), 0), *out]
    for pid in range(draw(st.integers(1, 2))):
        replicas = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3, unique=True))
        parts[pid] = replicas
        out.append((rec("PartitionRecord", partition_id=pid, topic_id=tid, replicas=replicas, isr=replicas,
                        leader=replicas[0], leader_epoch=0, partition_epoch=0,
                        directories=[draw(st.sampled_from(DIRS)) for _ in replicas]), 1))
    m.topics[name] = (tid, parts)
    return out


def _partition_change(draw: st.DrawFn, m: Model, name: str) -> Records:
    tid, parts = m.topics[name]
    pid = draw(st.sampled_from(sorted(parts)))
    fields: dict[str, Any] = {}
    for field in draw(st.lists(st.sampled_from(["isr", "leader", "replicas", "elr", "directories", "adding"]),
                               max_size=3, unique=True)):
        _change_field(draw, fields, field, parts, pid)
    if "replicas" in fields:  # a new replica set: lists that name old replicas are set again
        fields.setdefault("isr", list(parts[pid]))
        fields.setdefault("leader", parts[pid][0])
    return [(rec("PartitionChangeRecord", partition_id=pid, topic_id=tid, **fields), 2)]


def _change_field(draw: st.DrawFn, fields: dict[str, Any], field: str, parts: dict[int, list[int]],
                  pid: int) -> None:
    """One field of a PartitionChangeRecord, drawn against the partition's replicas as the change leaves them."""
    replicas = parts[pid]
    if field == "replicas":
        replicas = parts[pid] = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3, unique=True))
        fields["replicas"] = replicas
        fields["directories"] = [draw(st.sampled_from(DIRS)) for _ in replicas]
    elif field == "directories" and "replicas" not in fields:
        fields["directories"] = [draw(st.sampled_from(DIRS)) for _ in replicas]
    elif field == "isr":
        fields["isr"] = draw(st.lists(st.sampled_from(replicas), max_size=len(replicas), unique=True))
    elif field == "leader":
        fields["leader"] = draw(st.sampled_from([*replicas, -1]))
    elif field == "elr":
        fields["eligible_leader_replicas"] = draw(st.lists(st.sampled_from(replicas), max_size=2, unique=True))
    elif field == "adding":
        fields["adding_replicas"] = draw(st.lists(st.sampled_from(replicas), max_size=1))


def _config(draw: st.DrawFn) -> Records:
    rtype, rname = draw(st.sampled_from([(2, "foo"), (2, "bar"), (4, "1"), (4, "")]))
    return [(rec("ConfigRecord", resource_type=rtype, resource_name=rname, name=draw(st.sampled_from("xy")),
                 value=draw(st.sampled_from(["1", "2", None]))), 0)]


def _controller(draw: st.DrawFn) -> Records:
    return [(rec("RegisterControllerRecord", controller_id=draw(st.sampled_from([3000, 3001])),
                 incarnation_id=Uuid.of(3, draw(st.integers(1, 2))), zk_migration_ready=draw(st.booleans()),
                 end_points=[], features=[]), 0)]


def _feature(draw: st.DrawFn) -> Records:
    return [(rec("FeatureLevelRecord", name=draw(st.sampled_from(["metadata.version", "kraft.version"])),
                 feature_level=draw(st.integers(1, 2)) + (20 if draw(st.booleans()) else 0)), 0)]


_OTHER_STEPS = {"config": _config, "controller": _controller, "feature": _feature,
                "noop": lambda draw: [(rec("NoOpRecord"), 0)]}


@st.composite
def histories(draw: st.DrawFn) -> list[Any]:
    m, records, saved = Model(), [], None
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["op"] * 6 + ["begin", "end", "abort"]))
        if kind == "begin" and saved is None:
            saved = copy.deepcopy(m)
            records.append((rec("BeginTransactionRecord", name="t"), 0))
        elif kind in ("end", "abort") and saved is not None:
            records.append((rec("EndTransactionRecord" if kind == "end" else "AbortTransactionRecord"), 0))
            if kind == "abort":
                m = saved
            saved = None
        else:
            records += _op(draw, m)
    sizes = draw(st.lists(st.sampled_from([1, 1, 2, 3, 5]), min_size=1, max_size=5))
    batches: list[Any] = []
    i = n = 0
    while i < len(records):
        if draw(st.integers(0, 6)) == 0:
            batches.append(CONTROL)
        size = sizes[n % len(sizes)]
        # a batch ends at an abort (metalog's writers never put records after one in the same batch)
        chunk = records[i:i + size]
        for j, (r, _) in enumerate(chunk):
            if r.NAME == "AbortTransactionRecord":
                chunk = chunk[:j + 1]
                break
        batches.append(chunk)
        i += len(chunk)
        n += 1
    return batches


# ---- the differences between consecutive published states, computed here ---------------------------------------
def published_states(h: MetadataHistory) -> list[MetadataImage]:
    states, seen = [EMPTY], {-1}
    for offset in range(h.end_offset + 1):
        try:
            r = h.state_at(offset)
        except PointError:  # nothing published yet
            continue
        if r.offset not in seen:
            seen.add(r.offset)
            states.append(r.image)
    return states


def _partition(p: Any) -> dict[str, Any]:
    return {"replicas": list(p.replicas), "directories": [str(d) for d in p.directories], "isr": list(p.isr),
            "removingReplicas": list(p.removing_replicas), "addingReplicas": list(p.adding_replicas),
            "elr": list(p.elr), "lastKnownElr": list(p.last_known_elr), "leader": p.leader,
            "leaderRecoveryState": V.LEADER_RECOVERY_STATES[p.leader_recovery_state], "leaderEpoch": p.leader_epoch,
            "partitionEpoch": p.partition_epoch}


def _fields(offset: int, entity: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
            whole: bool) -> set[tuple[int, str, str | None]]:
    if before == after:
        return set()
    if whole and (before is None or after is None):
        return {(offset, entity, None)}
    before, after = before or {}, after or {}
    return {(offset, entity, k) for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def topic_diff(name: str, a: MetadataImage, b: MetadataImage) -> set[tuple[int, str, str | None]]:
    out: set[tuple[int, str, str | None]] = set()
    ta, tb = a.topics_by_name.get(name), b.topics_by_name.get(name)
    out |= _fields(b.offset, name, ta and {"name": name, "id": str(ta.id)}, tb and {"name": name, "id": str(tb.id)},
                   True)
    pa, pb = ({} if t is None else t.partitions for t in (ta, tb))
    for pid in pa.keys() | pb.keys():
        out |= _fields(b.offset, f"{name}-{pid}", pa.get(pid) and _partition(pa[pid]),
                       pb.get(pid) and _partition(pb[pid]), True)
    out |= _fields(b.offset, f"TOPIC/{name}", a.configs.get((2, name)), b.configs.get((2, name)), False)
    return out


def broker_diff(n: int, a: MetadataImage, b: MetadataImage) -> set[tuple[int, str, str | None]]:
    def reg(img: MetadataImage) -> dict[str, Any] | None:
        r = img.brokers.get(n)
        return None if r is None else {
            "epoch": r.epoch, "incarnationId": r.incarnation_id, "rack": r.rack, "fenced": r.fenced,
            "inControlledShutdown": r.in_controlled_shutdown, "isMigratingZkBroker": r.is_migrating_zk_broker,
            "directories": r.directories, "listeners": sorted(r.listeners), "supportedFeatures": sorted(r.features)}

    def roles(img: MetadataImage) -> dict[tuple[Uuid, int], dict[str, Any]]:
        out = {}
        for tid, t in img.topics.items():
            for pid, p in t.partitions.items():
                lists = {"replicas": p.replicas, "isr": p.isr, "elr": p.elr, "lastKnownElr": p.last_known_elr,
                         "addingReplicas": p.adding_replicas, "removingReplicas": p.removing_replicas}
                got = {k: n in v for k, v in lists.items()}
                got["leader"] = p.leader == n
                if any(got.values()):
                    got["directory"] = p.directory(n) if n in p.replicas else None
                    out[(tid, pid)] = got
        return out

    result = _fields(b.offset, f"broker {n}", reg(a), reg(b), True)
    ra, rb = roles(a), roles(b)
    for tid, pid in ra.keys() | rb.keys():
        name = (b.topics.get(tid) or a.topics.get(tid)).name
        no = {"replicas": False, "isr": False, "elr": False, "lastKnownElr": False, "addingReplicas": False,
              "removingReplicas": False, "leader": False, "directory": None}
        result |= _fields(b.offset, f"{name}-{pid}", ra.get((tid, pid), no), rb.get((tid, pid), no), False)
    return result


def config_diff(resource: tuple[int, str], a: MetadataImage, b: MetadataImage) -> set[tuple[int, str, str | None]]:
    label = f"{V.CONFIG_RESOURCE_TYPES[resource[0]]}/{resource[1]}"
    return _fields(b.offset, label, a.configs.get(resource), b.configs.get(resource), False)


def controller_diff(a: MetadataImage, b: MetadataImage) -> set[tuple[int, str, str | None]]:
    out: set[tuple[int, str, str | None]] = set()
    for c in a.controllers.keys() | b.controllers.keys():
        ra, rb = a.controllers.get(c), b.controllers.get(c)
        out |= _fields(b.offset, f"controller {c}",
                       ra and {"incarnationId": ra.incarnation_id, "zkMigrationReady": ra.zk_migration_ready},
                       rb and {"incarnationId": rb.incarnation_id, "zkMigrationReady": rb.zk_migration_ready}, True)
    return out


def features_diff(a: MetadataImage, b: MetadataImage) -> set[tuple[int, str, str | None]]:
    def view(img: MetadataImage) -> dict[str, Any]:
        return {"metadataVersion": img.features.metadata_version, "zkMigrationState": img.features.zk_migration_state,
                **{f"finalized_{k}": v for k, v in img.features.finalized.items()}}

    return _fields(b.offset, "features", view(a), view(b), False)


SUBJECTS = [
    (lambda: TopicSubject("foo"), lambda a, b: topic_diff("foo", a, b)),
    (lambda: TopicSubject("bar"), lambda a, b: topic_diff("bar", a, b)),
    (lambda: BrokerSubject(1), lambda a, b: broker_diff(1, a, b)),
    (lambda: BrokerSubject(4), lambda a, b: broker_diff(4, a, b)),  # never registers: a replica all the same
    (lambda: ConfigSubject(2, "foo"), lambda a, b: config_diff((2, "foo"), a, b)),
    (lambda: ConfigSubject(4, ""), lambda a, b: config_diff((4, ""), a, b)),
    (lambda: ControllerSubject(quorum=False), controller_diff),
    (lambda: FeaturesSubject(), features_diff),
]


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=40)  # each example writes a log and replays it at every offset
@given(batches=histories(), cut=st.integers(0, 200), span=st.integers(0, 200))
def test_every_listed_change_is_a_difference_of_consecutive_published_states_and_none_is_missed(
        batches: list[Any], cut: int, span: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), batches)
        with MetadataHistory(root) as h:
            states = published_states(h)
            offsets = [s.offset for s in states]
            for make, expected_diff in SUBJECTS:
                expected = set().union(*(expected_diff(a, b) for a, b in zip(states, states[1:], strict=False)))
                got = list(changes(h, make()))
                assert {(c.offset, c.entity, c.field) for c in got} == expected, "\n".join(render(got))
                assert [c.offset for c in got] == sorted(c.offset for c in got)  # in log order
                for c in got:  # the records named lie between the state before and the one the change is in
                    before = max(o for o in offsets if o < c.offset)
                    assert c.records and all(before < r.offset <= c.offset for r in c.records), c
                # a range of offsets starts from the state published before it and lists the same changes
                first = cut % (h.end_offset + 2)
                last = first + span % (h.end_offset + 2)
                ranged = [(c.offset, c.entity, c.field, c.before, c.after) for c in changes(h, make(), first, last)]
                assert ranged == [(c.offset, c.entity, c.field, c.before, c.after) for c in got
                                  if first <= c.offset <= last]


def test_the_quorum_leader_changes_are_the_leader_change_control_records(tmp_path: Path) -> None:
    # Kafka's LeaderChangeMessage (raft/src/main/java/org/apache/kafka/raft/internals/...): the leader's id; the
    # epoch is the control batch's partitionLeaderEpoch
    batches = [CONTROL, [(rec("NoOpRecord"), 0)], CONTROL, CONTROL, [(rec("NoOpRecord"), 0)]]
    with MetadataHistory(write(tmp_path, batches)) as h:
        got = list(changes(h, ControllerSubject()))
        assert [(c.offset, c.entity, c.field, c.before, c.after, [r.type for r in c.records]) for c in got] == [
            (0, "quorum", "leader", None, {"leaderId": 3000, "epoch": 1}, ["LEADER_CHANGE"]),
            (2, "quorum", "leader", {"leaderId": 3000, "epoch": 1}, {"leaderId": 3000, "epoch": 3}, ["LEADER_CHANGE"]),
            (3, "quorum", "leader", {"leaderId": 3000, "epoch": 3}, {"leaderId": 3001, "epoch": 4}, ["LEADER_CHANGE"]),
        ]
        # a range names the leader before it as the change's before
        assert [(c.offset, c.before) for c in changes(h, ControllerSubject(), 3, 4)] == \
            [(3, {"leaderId": 3000, "epoch": 3})]


def test_kafkas_kip858_log_the_changes_of_topic_foo(jbod_dir: Path) -> None:
    # the Kafka-written log: foo is created in the batch ending at 12, its directories assigned at 13..14, its
    # leader moved from broker 1 to 2 at 15, and broker 3 left foo-1's ISR at 23
    with MetadataHistory(jbod_dir) as h:
        got = [(c.offset, c.entity, c.field, c.before, c.after) for c in changes(h, TopicSubject("foo"))
               if c.field in (None, "leader", "isr", "min.insync.replicas")]
    assert got == [
        (12, "foo", None, None, {"name": "foo", "id": "UXyU9i5ARn6W00ON2taeWA"}),
        (12, "foo-0", None, None, got[1][4]),
        (12, "foo-1", None, None, got[2][4]),
        (12, "TOPIC/foo", "min.insync.replicas", None, "2"),
        (16, "foo-0", "isr", [1, 2, 3], [2, 3]),
        (16, "foo-0", "leader", 1, 2),
        (24, "foo-1", "isr", [2, 3, 1], [2, 1]),
    ]
    assert got[1][4]["replicas"] == [1, 2, 3] and got[2][4]["leader"] == 2
