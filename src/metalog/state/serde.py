"""State images: a MetadataImage as bytes (msgpack), versioned and checksummed, for fast restore.

Layout: ``b"MLIMG"`` | format version (1 byte) | CRC-32C of the payload (4 bytes, big-endian) |
payload length (8 bytes, big-endian) | payload. The payload is one msgpack map:

    offset      int, the last offset the image includes
    mv          int or nil, the metadata.version level
    features    {name: level} of the other finalized features
    zk          int, the ZkMigrationState value
    brokers     [[id, epoch, incarnation, [[listener, host, port, protocol]...],
                  [[feature, min, max]...], rack, fenced, in_controlled_shutdown, migrating_zk, [dir...]]...]
    topics      [[name, id, [[partition, replicas, dirs, isr, removing, adding, elr, last_known_elr,
                  leader, leader_recovery_state, leader_epoch, partition_epoch]...]]...]
    configs     [[resource_type, resource_name, {key: value}]...]
    quotas      [[[[entity_type, entity_name]...], {key: value}]...]
    next_pid    int or nil
    records     {"controllers"|"acls"|"scram"|"tokens": [framed metadata record bytes...]}

Uuids are 16 raw bytes. msgpack executes nothing it reads; ext types are refused.
"""

from __future__ import annotations

import struct
from typing import Any, TypeVar

import crc32c
import msgpack

from metalog.codec import messages  # its classes load on first use (the CLI imports this module to start)
from metalog.codec.framing import decode_metadata_record, encode_metadata_record
from metalog.codec.runtime import ApiMessage
from metalog.codec.uuid import Uuid
from metalog.errors import ImageFormatError
from metalog.state.image import (
    BrokerRegistration,
    FeaturesImage,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)

MAGIC = b"MLIMG"
FORMAT_VERSION = 1
_HEADER = struct.Struct(">5sBIQ")


def image_to_bytes(image: MetadataImage) -> bytes:
    f = image.features
    payload: bytes = msgpack.packb({
        "offset": image.offset, "mv": f.metadata_version, "features": f.finalized, "zk": f.zk_migration_state,
        "brokers": [[b.id, b.epoch, bytes(b.incarnation_id), [list(x) for x in b.listeners],
                     [list(x) for x in b.features], b.rack, b.fenced, b.in_controlled_shutdown,
                     b.is_migrating_zk_broker, [bytes(d) for d in b.directories]]
                    for b in image.brokers.values()],
        "topics": [[t.name, bytes(t.id), [[pid, p.replicas, [bytes(d) for d in p.directories], p.isr,
                                           p.removing_replicas, p.adding_replicas, p.elr, p.last_known_elr,
                                           p.leader, p.leader_recovery_state, p.leader_epoch, p.partition_epoch]
                                          for pid, p in t.partitions.items()]]
                   for t in image.topics.values()],
        "configs": [[rt, name, cfg] for (rt, name), cfg in image.configs.items()],
        "quotas": [[[list(e) for e in entity], values] for entity, values in image.client_quotas.items()],
        "next_pid": image.next_producer_id,
        "records": {kind: [encode_metadata_record(r, 0) for r in getattr(image, attr).values()]
                    for kind, attr in _RECORD_DOMAINS.items()},
    }, use_bin_type=True)
    return _HEADER.pack(MAGIC, FORMAT_VERSION, crc32c.crc32c(payload), len(payload)) + payload


_RECORD_DOMAINS = {"controllers": "controllers", "acls": "acls", "scram": "scram", "tokens": "delegation_tokens"}


def image_from_bytes(data: bytes | memoryview, source: str = "state image") -> MetadataImage:
    if len(data) < _HEADER.size:
        raise ImageFormatError(f"{source}: {len(data)} bytes is shorter than the {_HEADER.size}-byte header")
    magic, version, crc, length = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise ImageFormatError(f"{source}: not a metalog state image (magic {magic!r})")
    if version != FORMAT_VERSION:
        raise ImageFormatError(f"{source}: unsupported state image format version {version}")
    payload = memoryview(data)[_HEADER.size:]
    if len(payload) != length:
        raise ImageFormatError(f"{source}: payload is {len(payload)} bytes, header says {length}")
    if crc32c.crc32c(payload) != crc:
        raise ImageFormatError(f"{source}: checksum mismatch (the image is damaged)")
    try:
        d = msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=False)
        return _build(d)
    except (ValueError, TypeError, KeyError, IndexError, msgpack.UnpackException) as e:
        raise ImageFormatError(f"{source}: malformed payload ({type(e).__name__}: {e})") from None


class _Uuids(dict[bytes, Uuid]):
    """Raw bytes -> Uuid, each distinct id built (and length-checked) once: a cluster has few directories."""

    def __missing__(self, raw: bytes) -> Uuid:
        u = self[raw] = Uuid(raw)
        return u


def _build(d: dict[str, Any]) -> MetadataImage:
    uuid = _Uuids().__getitem__
    brokers = {}
    for bid, epoch, inc, listeners, feats, rack, fenced, ics, zk, dirs in d["brokers"]:
        brokers[bid] = BrokerRegistration(id=bid, epoch=epoch, incarnation_id=uuid(inc), listeners=listeners,
                                          features=feats, rack=rack, fenced=fenced, in_controlled_shutdown=ics,
                                          is_migrating_zk_broker=zk, directories=tuple(map(uuid, dirs)))
    topics = {}
    for name, tid, parts in d["topics"]:
        partitions = {p[0]: PartitionRegistration._make((p[1], tuple(map(uuid, p[2])), *p[3:])) for p in parts}
        topics[uuid(tid)] = TopicImage(name, uuid(tid), partitions)
    records = d["records"]
    return MetadataImage(
        offset=d["offset"], features=FeaturesImage(d["mv"], dict(d["features"]), d["zk"]), brokers=brokers,
        controllers={r.controller_id: r for r in _records(records, "controllers", messages.RegisterControllerRecord)},
        topics=topics, topics_by_name={t.name: t for t in topics.values()},
        configs={(rt, name): dict(cfg) for rt, name, cfg in d["configs"]},
        client_quotas={tuple(entity): dict(values) for entity, values in d["quotas"]},
        next_producer_id=d["next_pid"],
        acls={r.id: r for r in _records(records, "acls", messages.AccessControlEntryRecord)},
        scram={(r.name, r.mechanism): r for r in _records(records, "scram", messages.UserScramCredentialRecord)},
        delegation_tokens={r.token_id: r for r in _records(records, "tokens", messages.DelegationTokenRecord)})


R = TypeVar("R", bound=ApiMessage)


def _records(records: dict[str, list[bytes]], kind: str, cls: type[R]) -> list[R]:
    """The records of one ``kind``, each of the type the image keeps there (another is a malformed payload)."""
    out = []
    for raw in records[kind]:
        record = decode_metadata_record(raw).message
        if not isinstance(record, cls):
            raise TypeError(f"{kind} holds a {record.NAME}, not a {cls.NAME}")
        out.append(record)
    return out
