"""The tree kafka-metadata-shell shows, built over a MetadataImage: the same node names and the same text.

Kafka's shell (3.6 and later; ``shell/src/main/java/org/apache/kafka/shell/``) mounts two nodes at its root:
``/local`` (``LocalShellNode``: the shell's version and commit id) and ``/image`` (``MetadataImageNode``), whose
children are the image's domains as the node classes in ``metadata/src/main/java/org/apache/kafka/image/node/``
name them::

    /image/provenance                      ProvenanceNode: offset, epoch and time of the state shown
    /image/features/metadataVersion        FeaturesImageNode (and zkMigrationState, finalized_<feature>)
    /image/cluster/brokers/<id>            ClusterImageBrokersNode: BrokerRegistration.toString()
    /image/cluster/controllers/<id>        ClusterImageControllersNode: ControllerRegistration.toString()
    /image/topics/byName/<name>/{name,id,<partition>}   TopicsImageByNameNode, TopicImageNode
    /image/topics/byId/<id>/...            TopicsImageByIdNode
    /image/configs/<TYPE>:<name>/<key>     ConfigurationsImageNode (a default resource is just <TYPE>)
    /image/clientQuotas/<entity>/<key>     ClientQuotasImageNode (entity: clientId(x)_ip(y)_user(z))
    /image/producerIds/nextProducerId      ProducerIdsImageNode
    /image/acls/<id>                       AclsImageByIdNode, mounted as "acls": StandardAcl.toString()
    /image/scram/<mechanism>/<user>        ScramImageNode, ScramMechanismNode, ScramCredentialDataNode
    /image/delegationToken/<token id>      DelegationTokenImageNode, DelegationTokenDataNode

A leaf prints one line; a directory prints its children by name, each as ``name:`` with its content indented
two spaces (``MetadataNode.print`` with ``ShellNodePrinter``). Secrets are printed as Kafka's shell prints them
(``MetadataNodeRedactionCriteria``): a SCRAM credential's salt, keys and iterations and a sensitive config's
value as ``[redacted]``, unless secrets are shown (``metalog.secrets``; Kafka's ``Disabled`` criteria). Where
metalog differs: delegation tokens always print in Kafka's redacted form but for the token id and owner (a
token record holds no secret; the JSON image holds no more), and ``zkMigrationState`` is listed and readable
(Kafka 3.7 to 3.9; a 4.0 shell lists it and cannot read it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any

from metalog import __version__
from metalog.replay.points import format_time, utc_datetime
from metalog.secrets import KEPT, REDACTED, Secrets
from metalog.state import enums as V
from metalog.state.image import BrokerRegistration, MetadataImage, PartitionRegistration, uuid_order
from metalog.state.jsonimage import quota_entity_name

_VERSION_MAX = 32767  # Short.MAX_VALUE: VersionRange prints "min+" up to it


@dataclass(frozen=True)
class Provenance:
    """Kafka's MetadataProvenance of the state shown: its last offset, that batch's epoch and its time."""

    offset: int
    epoch: int
    timestamp: int


class Node:
    """A node of the shell's tree (Kafka's MetadataNode): a directory of named children, or a leaf."""

    is_directory = True

    def child_names(self) -> list[str]:
        return []

    def child(self, name: str) -> Node | None:
        return None

    def lines(self, indent: int = 0) -> Iterator[str]:
        """What ``cat``/``tree`` print: MetadataNode.print through ShellNodePrinter (children sorted by name)."""
        for name in sorted(self.child_names()):
            child = self.child(name)
            if child is None:
                continue
            yield f"{'  ' * indent}{name}:"
            yield from child.lines(indent + 1)


class Leaf(Node):
    is_directory = False

    def __init__(self, text: str) -> None:
        self.text = text

    def lines(self, indent: int = 0) -> Iterator[str]:
        yield f"{'  ' * indent}{self.text}"


class Directory(Node):
    """Children named up front, each made when it is asked for (an image may hold many thousands)."""

    def __init__(self, children: dict[str, Callable[[], Node | None]]) -> None:
        self._children = children

    def child_names(self) -> list[str]:
        return sorted(self._children)

    def child(self, name: str) -> Node | None:
        make = self._children.get(name)
        return None if make is None else make()


def root(image: MetadataImage, provenance: Provenance, secrets: Secrets = KEPT) -> Node:
    """RootShellNode: ``local`` and ``image`` (its secrets as ``secrets`` shows them)."""
    return Directory({"local": _local, "image": lambda: image_node(image, provenance, secrets)})


def _local() -> Node:
    # LocalShellNode: the shell's own version and commit id (AppInfoParser gives "unknown" without one)
    return Directory({"version": lambda: Leaf(__version__), "commitId": lambda: Leaf("unknown")})


def image_node(image: MetadataImage, provenance: Provenance, secrets: Secrets = KEPT) -> Node:
    """MetadataImageNode."""
    return Directory({
        "provenance": lambda: Leaf(provenance_text(provenance)),
        "features": lambda: _features(image),
        "cluster": lambda: Directory({"brokers": lambda: _brokers(image), "controllers": lambda: _controllers(image)}),
        "topics": lambda: Directory({"byName": lambda: _topics_by_name(image), "byId": lambda: _topics_by_id(image)}),
        "configs": lambda: _configs(image, secrets),
        "clientQuotas": lambda: _quotas(image),
        "producerIds": lambda: Directory({"nextProducerId": lambda: Leaf(
            str(-1 if image.next_producer_id is None else image.next_producer_id))}),
        "acls": lambda: _by_key({str(i): acl_text(image.acls[i]) for i in sorted(image.acls, key=uuid_order)}),
        "scram": lambda: _scram(image, secrets),
        "delegationToken": lambda: _by_key({t: token_text(image.delegation_tokens[t])
                                            for t in image.delegation_tokens}),
    })


def _leaf(text_of: Callable[[Any], str], value: Any) -> Node:
    """A leaf whose text is made when the node is read."""
    return Leaf(text_of(value))


def _by_key(texts: dict[str, str]) -> Node:
    return Directory({k: partial(Leaf, t) for k, t in texts.items()})


def _features(image: MetadataImage) -> Node:
    f = image.features
    children: dict[str, Callable[[], Node | None]] = {
        "metadataVersion": lambda: Leaf(V.metadata_version_name(f.metadata_version) or "none"),
        "zkMigrationState": lambda: Leaf(V.ZK_MIGRATION_STATES.get(f.zk_migration_state,
                                                                    str(f.zk_migration_state))),
    }
    for name, level in f.finalized.items():
        children[f"finalized_{name}"] = partial(Leaf, str(level))
    return Directory(children)


def _brokers(image: MetadataImage) -> Node:
    return Directory({str(b): partial(_leaf, broker_text, image.brokers[b]) for b in image.brokers})


def _controllers(image: MetadataImage) -> Node:
    return Directory({str(c): partial(_leaf, controller_text, image.controllers[c]) for c in image.controllers})


def _topics_by_name(image: MetadataImage) -> Node:
    return Directory({name: partial(_topic, t) for name, t in image.topics_by_name.items()})


def _topics_by_id(image: MetadataImage) -> Node:
    return Directory({str(tid): partial(_topic, t) for tid, t in image.topics.items()})


def _topic(topic: Any) -> Node:
    """TopicImageNode: ``name``, ``id`` and each partition's PartitionRegistration.toString()."""
    children: dict[str, Callable[[], Node | None]] = {"name": lambda: Leaf(topic.name),
                                                      "id": lambda: Leaf(str(topic.id))}
    for pid, p in topic.partitions.items():
        children[str(pid)] = partial(_leaf, partition_text, p)
    return Directory(children)


def config_resource_name(resource_type: int, resource_name: str) -> str:
    """ConfigurationsImageNode's child name: ``TYPE:name``, or ``TYPE`` for a default resource (empty name)."""
    type_name = V.CONFIG_RESOURCE_TYPES.get(resource_type, "UNKNOWN")
    return type_name if resource_name == "" else f"{type_name}:{resource_name}"


def _configs(image: MetadataImage, secrets: Secrets) -> Node:
    """ConfigurationsImageNode; ConfigurationImageNode prints a sensitive value as ``[redacted]``."""
    children: dict[str, Callable[[], Node | None]] = {}
    for (rt, rname), values in image.configs.items():
        children.setdefault(config_resource_name(rt, rname), partial(_config_values, values, secrets))
    return Directory(children)


def _config_values(values: dict[str, str], secrets: Secrets) -> Node:
    return _by_key({k: str(secrets.config(k, v)) for k, v in values.items()})


def _quotas(image: MetadataImage) -> Node:
    return Directory({quota_entity_name(e): partial(_quota_values, q) for e, q in image.client_quotas.items()})


def _quota_values(quotas: dict[str, float]) -> Node:
    return _by_key({k: java_double(v) for k, v in quotas.items()})


def _scram(image: MetadataImage, secrets: Secrets) -> Node:
    """ScramImageNode lists every mechanism Kafka knows, with or without users."""
    by_mechanism: dict[str, dict[str, str]] = {name: {} for name in V.SCRAM_MECHANISMS.values()}
    for (user, mechanism), record in image.scram.items():
        if mechanism in V.SCRAM_MECHANISMS:  # ScramImageNode has no node for UNKNOWN
            by_mechanism[V.SCRAM_MECHANISMS[mechanism]][user] = scram_text(record, secrets)
    return Directory({m: partial(_by_key, users) for m, users in by_mechanism.items()})


# ---- the text of each leaf, as Kafka's toString() writes it ----------------------------------------------------
def provenance_text(p: Provenance) -> str:
    """ProvenanceNode: ``offset N, epoch E, time`` in ISO_ZONED_DATE_TIME at UTC."""
    return f"offset {p.offset}, epoch {p.epoch}, time {iso_zoned(p.timestamp)}"


def iso_zoned(ms: int) -> str:
    """Java's ISO_ZONED_DATE_TIME of an Instant at ZoneId "UTC": ``2023-11-14T22:13:20.5Z[UTC]`` (the fraction
    only as long as it needs to be, none for a whole second). A time no datetime holds (before the year 1 or
    after 9999) is its epoch milliseconds, as ``format_time`` shows it (Java would write ``+10000-01-01T...``)."""
    moment = utc_datetime(ms)
    if moment is None:
        return format_time(ms)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return f"{text}Z[UTC]"


def version_range(low: int, high: int) -> str:
    """VersionRange.toString: ``5``, ``1+`` (up to Short.MAX_VALUE) or ``1-17``."""
    if low == high:
        return str(low)
    return f"{low}+" if high == _VERSION_MAX else f"{low}-{high}"


def endpoint_text(name: str, host: str, port: int, protocol: int) -> str:
    """org.apache.kafka.common.Endpoint.toString."""
    return (f"Endpoint(listenerName='{name}', securityProtocol={V.SECURITY_PROTOCOLS.get(protocol, protocol)}, "
            f"host='{host}', port={port})")


def broker_text(b: BrokerRegistration) -> str:
    """BrokerRegistration.toString: listeners and features sorted by name, rack as a Java Optional."""
    listeners = ", ".join(endpoint_text(*e) for e in sorted(b.listeners))
    features = ", ".join(f"{n}: {version_range(lo, hi)}" for n, lo, hi in sorted(b.features))
    rack = "Optional.empty" if b.rack is None else f"Optional[{b.rack}]"
    return (f"BrokerRegistration(id={b.id}, epoch={b.epoch}, incarnationId={b.incarnation_id}, "
            f"listeners=[{listeners}], supportedFeatures={{{features}}}, rack={rack}, fenced={_b(b.fenced)}, "
            f"inControlledShutdown={_b(b.in_controlled_shutdown)}, "
            f"isMigratingZkBroker={_b(b.is_migrating_zk_broker)}, directories={_list(b.directories)})")


def controller_text(r: Any) -> str:
    """ControllerRegistration.toString of a RegisterControllerRecord (endpoints and features by name)."""
    listeners = {e.name: endpoint_text(e.name, e.host, e.port, e.security_protocol) for e in r.end_points}
    features = {f.name: version_range(f.min_supported_version, f.max_supported_version) for f in r.features}
    return (f"ControllerRegistration(id={r.controller_id}, incarnationId={r.incarnation_id}, "
            f"zkMigrationReady={_b(r.zk_migration_ready)}, "
            f"listeners=[{', '.join(listeners[n] for n in sorted(listeners))}], "
            f"supportedFeatures={{{', '.join(f'{n}: {features[n]}' for n in sorted(features))}}})")


def partition_text(p: PartitionRegistration) -> str:
    """PartitionRegistration.toString (lists as Arrays.toString writes them)."""
    return (f"PartitionRegistration(replicas={_list(p.replicas)}, directories={_list(p.directories)}, "
            f"isr={_list(p.isr)}, removingReplicas={_list(p.removing_replicas)}, "
            f"addingReplicas={_list(p.adding_replicas)}, elr={_list(p.elr)}, lastKnownElr={_list(p.last_known_elr)}, "
            f"leader={p.leader}, leaderRecoveryState={V.LEADER_RECOVERY_STATES[p.leader_recovery_state]}, "
            f"leaderEpoch={p.leader_epoch}, partitionEpoch={p.partition_epoch})")


def acl_text(r: Any) -> str:
    """StandardAcl.toString of an AccessControlEntryRecord."""
    return (f"StandardAcl(resourceType={V.enum_name(V.ACL_RESOURCE_TYPES, r.resource_type)}, "
            f"resourceName={r.resource_name}, patternType={V.enum_name(V.ACL_PATTERN_TYPES, r.pattern_type)}, "
            f"principal={r.principal}, host={r.host}, operation={V.enum_name(V.ACL_OPERATIONS, r.operation)}, "
            f"permissionType={V.enum_name(V.ACL_PERMISSION_TYPES, r.permission_type)})")


def scram_text(r: Any, secrets: Secrets = KEPT) -> str:
    """ScramCredentialDataNode: salt, keys in hex and iterations, each ``[redacted]`` unless secrets are shown."""
    return (f"ScramCredentialData(salt={secrets.secret(bytes(r.salt).hex())}, "
            f"storedKey={secrets.secret(bytes(r.stored_key).hex())}, "
            f"serverKey={secrets.secret(bytes(r.server_key).hex())}, iterations={secrets.secret(r.iterations)})")


def token_text(r: Any) -> str:
    """DelegationTokenDataNode's form (its parentheses as Kafka writes them) with the token id and owner only;
    the rest redacted, as the JSON image holds no more."""
    return (f"DelegationTokenDatatokenId={r.token_id}(owner={r.owner}(tokenRequester={REDACTED}(renewers={REDACTED}, "
            f"issueTimestamp={REDACTED}, maxTimestamp={REDACTED}), expiryTimestamp={REDACTED}")


def java_double(x: float) -> str:
    """Java's Double.toString (JDK 19+, the shortest digits that read back): ``1024.0``, ``1.0E7``, ``1.0E-4``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "e" not in text else format(Decimal(text), "f")
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{len(mantissa) - 1 + exponent}"


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def _list(items: Any) -> str:
    return "[" + ", ".join(map(str, items)) + "]"
