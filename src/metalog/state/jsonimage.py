"""The JSON form of an image that ``metalog replay --format json`` prints.

Its shape is the ``finalImage`` Kafka's own replay produced in the reference vectors:
metadataVersion, metadataVersionLevel, zkMigrationState, finalizedFeatures, brokers (by id),
topics (by name, partitions by id, with offlineReplicas) and configs ("TYPE/name"). The rest of Kafka's
image follows, so that everything ``metalog shell`` shows is here too: controllers (by id), nextProducerId,
acls (by id), clientQuotas (by the entity's name in Kafka's shell, ``user(alice)_clientId(app)``), scram
(user names by mechanism), scramCredentials (by mechanism and user: salt, storedKey and serverKey in hex and the
iterations, each ``[redacted]`` unless secrets are shown, as Kafka's shell prints them) and delegationTokens (ids
and owners: never anything else). A sensitive config's value is ``[redacted]`` unless secrets are shown
(``metalog.secrets``).
"""

from __future__ import annotations

from typing import Any

from metalog.secrets import KEPT, Secrets
from metalog.state import enums as V
from metalog.state.enums import (
    CONFIG_RESOURCE_TYPES,
    LEADER_RECOVERY_STATES,
    ZK_MIGRATION_STATES,
    metadata_version_name,
)
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration, uuid_order

# ClientQuotaEntity's entity types, in the order Kafka's shell names them (ClientQuotasImageNode)
_QUOTA_TYPE_ORDER = {"client-id": 0, "ip": 1, "user": 2}
_QUOTA_TYPE_NAMES = {"client-id": "clientId", "ip": "ip", "user": "user"}
DEFAULT_QUOTA_ENTITY = "<default>"  # an entity name that is null: the default entity of its type


def image_to_json(image: MetadataImage, secrets: Secrets = KEPT) -> dict[str, Any]:
    f = image.features
    return {
        "metadataVersion": metadata_version_name(f.metadata_version),
        "metadataVersionLevel": f.metadata_version,
        "zkMigrationState": ZK_MIGRATION_STATES.get(f.zk_migration_state, str(f.zk_migration_state)),
        "finalizedFeatures": dict(sorted(f.finalized.items())),
        "brokers": {str(b): broker_to_json(image.brokers[b]) for b in sorted(image.brokers)},
        "topics": {
            name: {"id": str(t.id),
                   "partitions": {str(p): partition_to_json(image, t.partitions[p]) for p in sorted(t.partitions)}}
            for name, t in sorted(image.topics_by_name.items())
        },
        "configs": configs_to_json(image, secrets),
        "controllers": {str(c): controller_to_json(image.controllers[c]) for c in sorted(image.controllers)},
        "nextProducerId": image.next_producer_id,
        "acls": {str(i): acl_to_json(image.acls[i]) for i in sorted(image.acls, key=uuid_order)},
        "clientQuotas": dict(sorted((quota_entity_name(e), dict(sorted(q.items())))
                                    for e, q in image.client_quotas.items())),
        "scram": scram_users(image),
        "scramCredentials": scram_credentials(image, secrets),
        "delegationTokens": {t: {"owner": image.delegation_tokens[t].owner}
                             for t in sorted(image.delegation_tokens)},
    }


def configs_to_json(image: MetadataImage, secrets: Secrets = KEPT) -> dict[str, dict[str, str | None]]:
    """Each config resource (``TYPE/name``) with its values, a sensitive one as ``secrets`` shows it."""
    return {f"{CONFIG_RESOURCE_TYPES.get(rt, rt)}/{name}": {k: secrets.config(k, v) for k, v in sorted(cfg.items())}
            for (rt, name), cfg in sorted(image.configs.items())}


def broker_to_json(b: BrokerRegistration) -> dict[str, Any]:
    return {
        "epoch": b.epoch, "incarnationId": str(b.incarnation_id), "rack": b.rack, "fenced": b.fenced,
        "inControlledShutdown": b.in_controlled_shutdown, "isMigratingZkBroker": b.is_migrating_zk_broker,
        "directoriesSorted": [str(d) for d in b.directories],
    }


def partition_to_json(image: MetadataImage, p: PartitionRegistration) -> dict[str, Any]:
    return {
        "replicas": list(p.replicas), "directories": [str(d) for d in p.directories], "isr": list(p.isr),
        "removingReplicas": list(p.removing_replicas), "addingReplicas": list(p.adding_replicas),
        "elr": list(p.elr), "lastKnownElr": list(p.last_known_elr), "leader": p.leader,
        "leaderRecoveryState": LEADER_RECOVERY_STATES[p.leader_recovery_state],
        "leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch,
        "offlineReplicas": image.offline_replicas(p),
    }


def controller_to_json(r: Any) -> dict[str, Any]:
    """A RegisterControllerRecord as Kafka's ControllerRegistration holds it (endpoints and features by name)."""
    return {
        "incarnationId": str(r.incarnation_id), "zkMigrationReady": r.zk_migration_ready,
        "listeners": {e.name: {"host": e.host, "port": e.port,
                               "securityProtocol": V.SECURITY_PROTOCOLS.get(e.security_protocol,
                                                                            str(e.security_protocol))}
                      for e in sorted(r.end_points, key=lambda e: e.name)},
        "supportedFeatures": {f.name: [f.min_supported_version, f.max_supported_version]
                              for f in sorted(r.features, key=lambda f: f.name)},
    }


def acl_to_json(r: Any) -> dict[str, Any]:
    """An AccessControlEntryRecord as Kafka's StandardAcl names its fields."""
    return {
        "resourceType": V.enum_name(V.ACL_RESOURCE_TYPES, r.resource_type), "resourceName": r.resource_name,
        "patternType": V.enum_name(V.ACL_PATTERN_TYPES, r.pattern_type), "principal": r.principal,
        "host": r.host, "operation": V.enum_name(V.ACL_OPERATIONS, r.operation),
        "permissionType": V.enum_name(V.ACL_PERMISSION_TYPES, r.permission_type),
    }


def scram_users(image: MetadataImage) -> dict[str, list[str]]:
    """The users with a SCRAM credential, by mechanism name (Kafka's ScramImage): names only, never a salt or key."""
    out: dict[str, list[str]] = {name: [] for name in V.SCRAM_MECHANISMS.values()}
    for user, mechanism in image.scram:
        out.setdefault(V.enum_name(V.SCRAM_MECHANISMS, mechanism), []).append(user)
    return {m: sorted(users) for m, users in out.items()}


def scram_credentials(image: MetadataImage, secrets: Secrets = KEPT) -> dict[str, dict[str, dict[str, Any]]]:
    """Each SCRAM credential by mechanism name and user: its salt, stored key and server key in hex and its
    iterations, each as ``secrets`` shows it (Kafka's ScramCredentialDataNode, whose shell redacts all four)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (user, mechanism), r in sorted(image.scram.items()):
        out.setdefault(V.enum_name(V.SCRAM_MECHANISMS, mechanism), {})[user] = {
            "salt": secrets.secret(bytes(r.salt).hex()), "storedKey": secrets.secret(bytes(r.stored_key).hex()),
            "serverKey": secrets.secret(bytes(r.server_key).hex()), "iterations": secrets.secret(r.iterations)}
    return out


def quota_entity_name(entity: tuple[tuple[str, str | None], ...]) -> str:
    """A client quota entity as Kafka's shell names its node (ClientQuotasImageNode): ``clientId(x)``, ``ip(x)``
    and ``user(x)`` in that order, joined by ``_``, with ``\\``, ``(`` and ``)`` escaped by a backslash. A null
    name (the default entity of its type) reads ``<default>``: Kafka's shell leaves such a part out, so that the
    default user is named the empty string there. An entity type Kafka's shell does not know keeps its own
    name, after the others (Kafka's shell fails on it)."""
    parts = sorted(entity, key=lambda e: (_QUOTA_TYPE_ORDER.get(e[0], len(_QUOTA_TYPE_ORDER)), e[0]))
    return "_".join(f"{_QUOTA_TYPE_NAMES.get(t, t)}({_escape(DEFAULT_QUOTA_ENTITY if n is None else n)})"
                    for t, n in parts)


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
