"""kio 0.6.2 as a codec peer: its Rust ``entity_reader`` and Python ``entity_writer``.

The two metadata records, which kio lacks, are declared as kio entity dataclasses the way kio's
generated schema classes are. Importing this module needs kio (the ``bench`` extra).
"""

# No ``from __future__ import annotations``: kio reads the entity dataclasses' field types at runtime.
import dataclasses
import datetime
import io
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.schema.assign_replicas_to_dirs.v0.request import AssignReplicasToDirsRequest as KioAssignReplicasToDirs
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.schema.update_metadata.v8.request import UpdateMetadataRequest as KioUpdateMetadata
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32

from metalog.bench.codec import Case, check
from metalog.bench.timing import Op
from metalog.codec import Uuid


# The two metadata records as kio entities, declared the way kio's generated schema classes are.
@dataclass(frozen=True, slots=True, kw_only=True)
class KioPartitionRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    isr: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    removing_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    adding_replicas: tuple[BrokerId, ...] = field(metadata={"kafka_type": "int32"}, default=())
    leader: BrokerId = field(metadata={"kafka_type": "int32"}, default=BrokerId(-1))
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    partition_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    directories: tuple[uuid.UUID, ...] = field(metadata={"kafka_type": "uuid"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class KioPartitionChangeRecord:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    partition_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    isr: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 0}, default=None)
    leader: BrokerId = field(metadata={"kafka_type": "int32", "tag": 1}, default=BrokerId(-2))
    replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 2}, default=None)
    removing_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 3}, default=None)
    adding_replicas: tuple[BrokerId, ...] | None = field(metadata={"kafka_type": "int32", "tag": 4}, default=None)
    leader_recovery_state: i8 = field(metadata={"kafka_type": "int8", "tag": 5}, default=i8(-1))
    directories: tuple[uuid.UUID, ...] | None = field(metadata={"kafka_type": "uuid", "tag": 8}, default=None)


KIO_CLASSES = {"PartitionRecord": KioPartitionRecord, "PartitionChangeRecord": KioPartitionChangeRecord,
               "UpdateMetadataRequest": KioUpdateMetadata, "AssignReplicasToDirsRequest": KioAssignReplicasToDirs}
KIO_RENAMES = {"throttle_time": "throttle_time_ms"}  # beyond a trailing underscore (id_, type_)


def kio_scalar(kafka_type: str, value: Any) -> Any:
    if kafka_type == "uuid":  # kio, like Kafka's JSON form, holds the zero uuid as None
        return None if value == Uuid() else uuid.UUID(bytes=bytes(value))
    if kafka_type == "error_code":
        return ErrorCode(value)
    if kafka_type == "timedelta_i32":
        return datetime.timedelta(milliseconds=value)
    return value


def to_kio(obj: Any, cls: type) -> Any:
    kwargs = {}
    for f in dataclasses.fields(cls):
        value = getattr(obj, KIO_RENAMES.get(f.name, f.name.rstrip("_")))
        kind = classify_field(f)
        if value is None:
            pass
        elif isinstance(kind, EntityTupleField):
            value = tuple(to_kio(v, kind.type_) for v in value)
        elif isinstance(kind, EntityField):
            value = to_kio(value, kind.type_)
        elif isinstance(kind, PrimitiveTupleField):
            value = tuple(kio_scalar(f.metadata["kafka_type"], v) for v in value)
        else:
            value = kio_scalar(f.metadata["kafka_type"], value)
        kwargs[f.name] = value
    return cls(**kwargs)


def kio_ops(case: Case, obj: Any, data: bytes) -> tuple[Op, Op]:
    cls = KIO_CLASSES[case.name]
    entity = to_kio(obj, cls)
    write: Any = entity_writer(cls)
    read: Any = entity_reader(cls)

    def encode() -> bytes:
        buf = io.BytesIO()
        write(buf, entity)
        return buf.getvalue()

    check(encode() == data, "kio wrote different bytes")
    check(read(data, 0) == (entity, len(data)), "kio read different values")
    return encode, lambda: read(data, 0)


