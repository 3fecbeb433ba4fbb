"""Kafka's enumerations and constants that metadata records speak in: metadata.version levels and the levels at
which record formats change, ZooKeeper migration states, leader recovery states, the special values of
PartitionChangeRecord and BrokerRegistrationChangeRecord fields, security protocols, config resource types, the ACL
enumerations and SCRAM mechanisms."""

from __future__ import annotations

__all__ = [
    "ACL_OPERATIONS",
    "ACL_PATTERN_TYPES",
    "ACL_PERMISSION_TYPES",
    "ACL_RESOURCE_TYPES",
    "CONFIG_RESOURCE_IDS",
    "CONFIG_RESOURCE_TYPES",
    "FENCE",
    "IN_CONTROLLED_SHUTDOWN",
    "LEADER_RECOVERY_NO_CHANGE",
    "LEADER_RECOVERY_STATES",
    "METADATA_VERSION_FEATURE",
    "METADATA_VERSION_LEVELS",
    "METADATA_VERSIONS",
    "MV_3_3_IV3_IN_CONTROLLED_SHUTDOWN",
    "MV_3_4_IV0_MIGRATION",
    "MV_3_6_IV1_TRANSACTIONS",
    "MV_3_7_IV0_CONTROLLER_REGISTRATION",
    "MV_3_7_IV2_DIRECTORY_ASSIGNMENT",
    "MV_4_0_IV1_ELR",
    "NO_FENCING_CHANGE",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "NO_SHUTDOWN_CHANGE",
    "SCRAM_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "TOPIC_RESOURCE",
    "UNFENCE",
    "ZK_MIGRATION_STATES",
    "ZK_MIGRATION_VALUES",
    "enum_name",
    "metadata_version_name",
    "parse_metadata_version",
    "record_type_name",
]

METADATA_VERSION_FEATURE = "metadata.version"

# metadata.version feature level -> release name (Kafka's MetadataVersion).
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0",
    29: "4.2-IV1",
}
METADATA_VERSION_LEVELS = {name: level for level, name in METADATA_VERSIONS.items()}

# Levels at which record formats change (MetadataVersion.isXxxSupported).
MV_3_3_IV3_IN_CONTROLLED_SHUTDOWN = 7
MV_3_4_IV0_MIGRATION = 8
MV_3_6_IV1_TRANSACTIONS = 13
MV_3_7_IV0_CONTROLLER_REGISTRATION = 15
MV_3_7_IV2_DIRECTORY_ASSIGNMENT = 17
MV_4_0_IV1_ELR = 23


def metadata_version_name(level: int | None) -> str | None:
    if level is None:
        return None
    return METADATA_VERSIONS.get(level, f"unknown-level-{level}")


def parse_metadata_version(text: str) -> int:
    """A level from ``3.7-IV2`` or ``17``."""
    if text.isdigit():
        return int(text)
    if text not in METADATA_VERSION_LEVELS:
        raise ValueError(f"unknown metadata.version {text!r}")
    return METADATA_VERSION_LEVELS[text]


# ZkMigrationStateRecord values (Kafka 3.5+ swapped PRE_MIGRATION and MIGRATION relative to 3.4).
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}
ZK_MIGRATION_VALUES = {name: value for value, name in ZK_MIGRATION_STATES.items()}

LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}
LEADER_RECOVERY_NO_CHANGE = -1

# BrokerRegistrationChangeRecord.Fenced: 1 fence, 0 no change, -1 unfence.
FENCE, NO_FENCING_CHANGE, UNFENCE = 1, 0, -1
# BrokerRegistrationChangeRecord.InControlledShutdown: 0 no change, 1 in controlled shutdown.
NO_SHUTDOWN_CHANGE, IN_CONTROLLED_SHUTDOWN = 0, 1

# PartitionChangeRecord.Leader: -2 keeps the leader (and its epoch); -1 means no leader.
NO_LEADER_CHANGE = -2
NO_LEADER = -1

# SecurityProtocol ids as the endpoints of RegisterBrokerRecord and RegisterControllerRecord carry them.
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

# ConfigResource.Type ids as ConfigRecord.ResourceType carries them.
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS",
                         32: "GROUP"}
CONFIG_RESOURCE_IDS = {name: value for value, name in CONFIG_RESOURCE_TYPES.items()}
TOPIC_RESOURCE = 2


def record_type_name(message_name: str) -> str:
    """Kafka's MetadataRecordType name: ``PartitionChangeRecord`` -> ``PARTITION_CHANGE_RECORD``."""
    from metalog.codec.schema import snake

    return snake(message_name).upper()


# The ACL enumerations as AccessControlEntryRecord carries them (Kafka's ResourceType, PatternType, AclOperation and
# AclPermissionType codes; StandardAcl.fromRecord maps a code it does not know to UNKNOWN).
ACL_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                      6: "DELEGATION_TOKEN", 7: "USER"}
ACL_PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
                  12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ACL_PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

# UserScramCredentialRecord.Mechanism: Kafka's ScramMechanism type -> mechanism name (0 is UNKNOWN).
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def enum_name(names: dict[int, str], code: int) -> str:
    """Kafka's name for ``code``; a code Kafka does not know reads UNKNOWN, as Kafka's fromCode gives it."""
    return names.get(code, "UNKNOWN")
