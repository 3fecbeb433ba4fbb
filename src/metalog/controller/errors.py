"""Kafka's error codes (org.apache.kafka.common.protocol.Errors) that controller commands answer with,
(placement's PlacementError is in metalog.errors, with every other exception)."""

from __future__ import annotations

from metalog.errors import PlacementError  # noqa: F401  (raised by placement; named here too)

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
BROKER_NOT_AVAILABLE = 8
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
STALE_BROKER_EPOCH = 77
INVALID_UPDATE_VERSION = 95
UNKNOWN_TOPIC_ID = 100
DUPLICATE_BROKER_REGISTRATION = 101
BROKER_ID_NOT_REGISTERED = 102
INCONSISTENT_CLUSTER_ID = 104
INELIGIBLE_REPLICA = 107
INVALID_REGISTRATION = 119

NAMES = {v: k for k, v in globals().items() if k.isupper() and isinstance(v, int)}


def error_name(code: int) -> str:
    return NAMES.get(code, f"ERROR_{code}")
