"""Codec benchmark inputs (four messages) and metalog's encode/decode operations on them.

Every implementation encodes the same values and must produce metalog's bytes, and decode those
bytes back to an equal object, before anything is timed (``check``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from metalog.bench.timing import Op
from metalog.codec import Uuid, message_class, struct_class
from metalog.errors import NotComparable


# ---- the four inputs --------------------------------------------------------------------------
def uid(n: int) -> Uuid:
    return Uuid(uuid.UUID(int=(n * 0x9E3779B97F4A7C15 + 1) % (1 << 128)).bytes)


def _structs(message: str, *names: str) -> SimpleNamespace:
    return SimpleNamespace(**{n: struct_class(message, n) for n in names})


def partition_record() -> Any:
    return message_class("PartitionRecord")(
        partition_id=7, topic_id=uid(1), replicas=[1, 2, 3], isr=[1, 2, 3], leader=1, leader_epoch=5,
        partition_epoch=9, directories=[uid(11), uid(12), uid(13)])


def partition_change_record() -> Any:
    return message_class("PartitionChangeRecord")(partition_id=7, topic_id=uid(1), isr=[1, 3], leader=3)


def update_metadata_request() -> Any:
    cls = message_class("UpdateMetadataRequest")
    m = _structs(cls.NAME, "UpdateMetadataBroker", "UpdateMetadataEndpoint", "UpdateMetadataTopicState",
                 "UpdateMetadataPartitionState")
    brokers = [m.UpdateMetadataBroker(
        id=b, endpoints=[m.UpdateMetadataEndpoint(port=9092, host=f"broker-{b}.kafka.internal", listener="PLAINTEXT",
                                                  security_protocol=0)],
        rack=f"rack-{b % 3}" if b % 2 else None) for b in range(50)]
    topics = [m.UpdateMetadataTopicState(topic_name=f"topic-{t}", topic_id=uid(100 + t), partition_states=[
        m.UpdateMetadataPartitionState(partition_index=p, controller_epoch=3, leader=(t + p) % 50, leader_epoch=4,
                                       isr=[(t + p + i) % 50 for i in range(3)], zk_version=0,
                                       replicas=[(t + p + i) % 50 for i in range(3)])
        for p in range(10)]) for t in range(20)]
    return cls(controller_id=1000, is_k_raft_controller=True, controller_epoch=3, broker_epoch=42,
               topic_states=topics, live_brokers=brokers)


def assign_replicas_to_dirs_request() -> Any:
    cls = message_class("AssignReplicasToDirsRequest")
    m = _structs(cls.NAME, "DirectoryData", "TopicData", "PartitionData")
    dirs = [m.DirectoryData(id=uid(200 + d), topics=[
        m.TopicData(topic_id=uid(100 + t), partitions=[m.PartitionData(partition_index=p) for p in range(10)])
        for t in range(20)]) for d in range(10)]
    return cls(broker_id=1, broker_epoch=42, directories=dirs)


@dataclass
class Case:
    label: str
    name: str
    version: int
    build: Callable[[], Any]


CASES = [
    Case("(a) PartitionRecord v1", "PartitionRecord", 1, partition_record),
    Case("(b) PartitionChangeRecord v1", "PartitionChangeRecord", 1, partition_change_record),
    Case("(c) UpdateMetadataRequest v8", "UpdateMetadataRequest", 8, update_metadata_request),
    Case("(d) AssignReplicasToDirsRequest v0", "AssignReplicasToDirsRequest", 0, assign_replicas_to_dirs_request),
]


# ---- metalog's two codecs ---------------------------------------------------------------------
def metalog_ops(case: Case, obj: Any, data: bytes) -> tuple[Op, Op]:
    cls, v = type(obj), case.version
    check(cls.decode(data, v) == obj, "metalog decode differs")
    return lambda: obj.encode(v), lambda: cls.decode(data, v)


def pure_decode_op(case: Case, obj: Any, data: bytes) -> Op | None:
    """metalog's decode on its pure Python readers (the steps of ``ApiMessage.decode``), or None where the
    pure readers are the ones running anyway (then ``metalog_ops`` times them)."""
    from metalog.codec import core
    from metalog.codec.runtime import Malformed

    cls, v = type(obj), case.version
    if not core.is_compiled(cls):
        return None
    readers = core.pure_readers(cls)

    def decode() -> Any:
        read = readers.get(v)
        buf: bytes | memoryview = data
        if type(buf) is memoryview:
            buf = buf.cast("B")
        got, pos = read(buf, 0)  # type: ignore[misc]
        if pos != len(buf):
            raise Malformed("trailing bytes")
        return got

    check(decode() == obj, "metalog's pure decode differs")
    return decode


def reference_ops(case: Case, obj: Any, data: bytes) -> tuple[Op, Op]:
    from metalog.codec import reference

    v = case.version
    check(reference.encode(obj, v) == data, "reference wrote different bytes")
    check(reference.decode(case.name, data, v) == obj, "reference read different values")
    return lambda: reference.encode(obj, v), lambda: reference.decode(case.name, data, v)



def check(ok: bool, what: str) -> None:
    if not ok:
        raise NotComparable(f"not timed, inputs differ: {what}")
