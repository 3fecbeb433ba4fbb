"""Control records: a 4-byte key (int16 version 0, int16 type) and a message body as the value.

Types are Kafka's ControlRecordType ids. KRaft writes every control message at version 0
(ControlRecordUtils' *_CURRENT_VERSION); each body starts with its own int16 ``Version`` field,
and the reader decodes at that version.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Any, NamedTuple

from metalog.codec import message_class
from metalog.errors import DecodeError

KEY = struct.Struct(">hh")
KEY_VERSION = 0
_END_TXN = struct.Struct(">hi")


class ControlType(IntEnum):
    """Kafka's ControlRecordType."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


MESSAGES = {
    ControlType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlType.KRAFT_VOTERS: "VotersRecord",
}
TYPE_OF_MESSAGE = {name: t for t, name in MESSAGES.items()}
# What kafka-dump-log prints before each control message's JSON.
DUMP_LABELS = {
    ControlType.LEADER_CHANGE: "LeaderChange",
    ControlType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlType.KRAFT_VERSION: "KRaftVersion",
    ControlType.KRAFT_VOTERS: "KRaftVoters",
}


class ControlRecord(NamedTuple):
    """A decoded control record: its type, the version of its body, and the body (a message or a dict)."""

    type: ControlType
    version: int
    message: Any

    def data_json(self) -> dict[str, Any]:
        if isinstance(self.message, dict):
            return dict(self.message)
        form: dict[str, Any] = self.message.to_json(self.version)
        return form


def control_key(control_type: int) -> bytes:
    return KEY.pack(KEY_VERSION, int(control_type))


def parse_control_key(key: bytes | None) -> ControlType:
    if key is None or len(key) < KEY.size:
        raise DecodeError(f"control record key must be at least {KEY.size} bytes, got "
                          f"{'null' if key is None else len(key)}", field="key", offset=0)
    version, type_id = KEY.unpack_from(key, 0)
    if version != KEY_VERSION:
        raise DecodeError(f"unknown control record key version {version}", field="key version", offset=0)
    try:
        return ControlType(type_id)
    except ValueError:
        raise DecodeError(f"unknown control record type {type_id}", field="key type", offset=2) from None


def encode_control(message: Any, version: int = 0) -> tuple[bytes, bytes]:
    """(key, value) of the control record carrying ``message`` (LeaderChangeMessage, SnapshotHeaderRecord...)."""
    control_type = TYPE_OF_MESSAGE.get(message.NAME)
    if control_type is None:
        raise ValueError(f"{message.NAME} is not a control record message")
    return control_key(control_type), message.encode(version)


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    control_type = parse_control_key(key)
    if value is None or len(value) < 2:
        raise DecodeError("control record value is missing or shorter than its version field", field="value",
                          offset=0)
    version = int.from_bytes(value[:2], "big", signed=True)
    if control_type in (ControlType.ABORT, ControlType.COMMIT):
        if len(value) < _END_TXN.size:
            raise DecodeError("end transaction marker is truncated", field="value", offset=0)
        _, coordinator_epoch = _END_TXN.unpack_from(value, 0)
        return ControlRecord(control_type, version, {"version": version, "coordinatorEpoch": coordinator_epoch})
    cls = message_class(MESSAGES[control_type])
    if version not in cls.VERSIONS:
        raise DecodeError(f"unsupported version {version} of {cls.NAME}", message=cls.NAME, field="version",
                          offset=0)
    return ControlRecord(control_type, version, cls.decode(value, version))
