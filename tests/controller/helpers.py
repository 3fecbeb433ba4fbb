"""Building clusters for controller tests."""

from __future__ import annotations

from typing import Any

from metalog.codec import message_class, struct_class
from metalog.codec.uuid import Uuid
from metalog.controller.commands import SetFeatureLevel
from metalog.controller.controller import Controller

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def struct(message: str, name: str) -> Any:
    return struct_class(message, name)


def dir_id(broker: int, n: int) -> Uuid:
    return Uuid.of(0x1000 + broker, 0x100 + n)


def registration(broker_id: int, dirs: list[Uuid], rack: str | None = None, *, incarnation: int = 1,
                 mv_range: tuple[int, int] = (1, 29), cluster_id: str = CLUSTER_ID) -> Any:
    listener = struct("BrokerRegistrationRequest", "Listener")
    feature = struct("BrokerRegistrationRequest", "Feature")
    return message_class("BrokerRegistrationRequest")(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=Uuid.of(broker_id, incarnation),
        listeners=[listener(name="PLAINTEXT", host=f"broker{broker_id}", port=9092, security_protocol=0)],
        features=[feature(name="metadata.version", min_supported_version=mv_range[0],
                          max_supported_version=mv_range[1])],
        rack=rack, log_dirs=list(dirs))


def heartbeat(broker_id: int, epoch: int, *, offset: int = 10**9, want_fence: bool = False,
              want_shut_down: bool = False, offline: list[Uuid] | None = None) -> Any:
    return message_class("BrokerHeartbeatRequest")(
        broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset, want_fence=want_fence,
        want_shut_down=want_shut_down, offline_log_dirs=list(offline or []))


def assign_request(broker_id: int, epoch: int, entries: list[tuple[Uuid, Uuid, int]]) -> Any:
    """entries: (directory, topic id, partition)."""
    req_dir = struct("AssignReplicasToDirsRequest", "DirectoryData")
    req_topic = struct("AssignReplicasToDirsRequest", "TopicData")
    req_part = struct("AssignReplicasToDirsRequest", "PartitionData")
    by_dir: dict[Uuid, dict[Uuid, list[int]]] = {}
    for d, t, p in entries:
        by_dir.setdefault(d, {}).setdefault(t, []).append(p)
    return message_class("AssignReplicasToDirsRequest")(broker_id=broker_id, broker_epoch=epoch, directories=[
        req_dir(id=d, topics=[req_topic(topic_id=t, partitions=[req_part(partition_index=p) for p in ps])
                              for t, ps in topics.items()]) for d, topics in by_dir.items()])


def cluster(level: int = 21, dirs_per_broker: tuple[int, ...] = (2, 2, 1), racks: tuple[str | None, ...] | None = None,
            unfence: bool = True) -> Controller:
    c = Controller(cluster_id=CLUSTER_ID)
    assert c.submit(SetFeatureLevel("metadata.version", level)).ok
    for b, n in enumerate(dirs_per_broker):
        rack = racks[b] if racks else None
        r = c.submit(registration(b, [dir_id(b, i) for i in range(n)], rack))
        assert r.ok, r.error_message
        if unfence:
            assert c.submit(heartbeat(b, r.response.broker_epoch)).ok
    return c


def epoch(c: Controller, broker_id: int) -> int:
    return c.image.brokers[broker_id].epoch
