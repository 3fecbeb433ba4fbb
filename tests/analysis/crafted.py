"""Crafted histories for the analysis tests: records built by hand, one batch per step exactly as given (built
whole, so nothing reshapes it: records may follow an abort), timestamps per batch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.codec.uuid import MIGRATING, UNASSIGNED
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch

T0 = 1_700_000_000_000
NONE, MIGRATION, PRE_MIGRATION, POST_MIGRATION = 0, 1, 2, 3


def uuid(n: int) -> Uuid:
    return Uuid(n.to_bytes(16, "big"))


def rec(message: str, version: int = 0, /, **fields: Any) -> tuple[Any, int]:
    return message_class(message)(**fields), version


def broker(bid: int, epoch: int, *, zk: bool = False, dirs: list[Uuid] | None = None) -> tuple[Any, int]:
    cls = message_class("RegisterBrokerRecord")
    mod = __import__(cls.__module__, fromlist=["x"])
    extra: dict[str, Any] = {"is_migrating_zk_broker": zk}
    version = 2
    if dirs is not None:
        extra["log_dirs"], version = dirs, 3
    return rec("RegisterBrokerRecord", version, broker_id=bid, broker_epoch=epoch, incarnation_id=uuid(1000 + epoch),
               fenced=True, rack=None,
               end_points=[mod.BrokerEndpoint(name="PLAINTEXT", host=f"b{bid}", port=9092, security_protocol=0)],
               features=[], **extra)


def unfence(bid: int, epoch: int) -> tuple[Any, int]:
    return rec("BrokerRegistrationChangeRecord", broker_id=bid, broker_epoch=epoch, fenced=-1)


def feature(level: int) -> tuple[Any, int]:
    return rec("FeatureLevelRecord", name="metadata.version", feature_level=level)


def zk_state(state: int) -> tuple[Any, int]:
    return rec("ZkMigrationStateRecord", zk_migration_state=state)


def topic(n: int, replicas: list[list[int]], dirs: list[list[Uuid]] | None = None) -> list[tuple[Any, int]]:
    out = [rec("TopicRecord", name=f"t{n}", topic_id=uuid(n))]
    for pid, rs in enumerate(replicas):
        extra = {"directories": dirs[pid]} if dirs else {}
        out.append(rec("PartitionRecord", 1 if dirs else 0, partition_id=pid, topic_id=uuid(n), replicas=rs,
                       isr=rs, leader=rs[0], leader_epoch=0, partition_epoch=0, **extra))
    return out


def move(n: int, pid: int, dirs: list[Uuid]) -> tuple[Any, int]:
    return rec("PartitionChangeRecord", 1, partition_id=pid, topic_id=uuid(n), directories=dirs)


def begin() -> tuple[Any, int]:
    return rec("BeginTransactionRecord", name="load")


def end() -> tuple[Any, int]:
    return rec("EndTransactionRecord")


def abort() -> tuple[Any, int]:
    return rec("AbortTransactionRecord", reason="failed")


@dataclass(frozen=True)
class Leader:
    """A step that is a control batch: a LeaderChangeMessage electing ``leader_id`` in ``epoch``."""

    leader_id: int
    epoch: int


def write(root: Path, steps: list[list[tuple[Any, int]] | Leader], *, every_ms: int = 1000,
          segment_bytes: int = 1 << 30) -> Path:
    """One batch per step, the n-th stamped T0 + n * every_ms; data batches in epoch 1 unless a Leader step
    moved the epoch on. Its meta.properties names the cluster as its directory is named (``cluster.id``, which
    names a cluster in the analysis; Kafka's are Uuids, the tests' are read back as they are)."""
    epoch = 1
    config = LogConfig(segment_bytes=segment_bytes, durability=Durability.NONE, cluster_id=root.name)
    with MetadataLog.open(root, Mode.CREATE, config=config) as log:
        for n, step in enumerate(steps):
            if isinstance(step, Leader):
                epoch = step.epoch
                voter = message_class("LeaderChangeMessage")(leader_id=step.leader_id, voters=[])
                log.append_control([(voter, 0)], epoch=epoch, timestamp=T0 + n * every_ms)
            else:
                values = [encode_metadata_record(*r) for r in step]
                log.append_batch(build_data_batch(0, values, epoch=epoch, timestamp=T0 + n * every_ms))
    return root


__all__ = ["MIGRATING", "UNASSIGNED"]
