"""The JSON image (``metalog replay --format json``) holds every domain of Kafka's MetadataImage that
``metalog shell`` shows: controllers, producer ids, ACLs, client quotas, SCRAM users and delegation tokens, with
no secret (salts, stored and server keys) and nothing of a token but its id and owner."""

from __future__ import annotations

import json
from typing import Any

from metalog.codec import Uuid, message_class, struct_class
from metalog.state import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage
from metalog.state.jsonimage import image_to_json, quota_entity_name

ACL = Uuid.parse("AAAAAAAAAAEAAAAAAAAAAQ")


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def quota(entity: list[tuple[str, str | None]], key: str, value: float, remove: bool = False) -> Any:
    entity_data = struct_class("ClientQuotaRecord", "EntityData")
    return rec("ClientQuotaRecord", entity=[entity_data(entity_type=t, entity_name=n) for t, n in entity], key=key,
               value=value, remove=remove)


def build(*records: Any) -> MetadataImage:
    delta = MetadataDelta(EMPTY)
    for i, r in enumerate(records):
        delta.replay(r, i)
    return delta.apply()


def test_empty_image_has_every_domain_empty() -> None:
    # Kafka's MetadataImage.EMPTY: no controllers, no producer id block, no ACLs, quotas, SCRAM users or tokens
    j = image_to_json(EMPTY)
    assert (j["controllers"], j["nextProducerId"], j["acls"], j["clientQuotas"], j["delegationTokens"]) == \
        ({}, None, {}, {}, {})
    assert j["scram"] == {"SCRAM-SHA-256": [], "SCRAM-SHA-512": []}  # ScramImageNode lists both mechanisms


def test_acls_by_id_with_kafkas_enum_names() -> None:
    # StandardAcl.fromRecord: ResourceType, PatternType, AclOperation, AclPermissionType from their codes
    img = build(rec("AccessControlEntryRecord", id=ACL, resource_type=2, resource_name="foo", pattern_type=3,
                    principal="User:alice", host="*", operation=3, permission_type=3))
    assert image_to_json(img)["acls"] == {str(ACL): {
        "resourceType": "TOPIC", "resourceName": "foo", "patternType": "LITERAL", "principal": "User:alice",
        "host": "*", "operation": "READ", "permissionType": "ALLOW"}}


def test_acl_codes_kafka_does_not_know_read_unknown() -> None:
    img = build(rec("AccessControlEntryRecord", id=ACL, resource_type=99, resource_name="x", pattern_type=42,
                    principal="User:a", host="*", operation=77, permission_type=9))
    acl = image_to_json(img)["acls"][str(ACL)]
    assert (acl["resourceType"], acl["patternType"], acl["operation"], acl["permissionType"]) == ("UNKNOWN",) * 4


def test_scram_users_by_mechanism_never_a_salt_or_key() -> None:
    secret = b"\x13\x37" * 16
    img = build(rec("UserScramCredentialRecord", name="bob", mechanism=2, salt=secret, stored_key=secret,
                    server_key=secret, iterations=8192),
                rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=secret, stored_key=secret,
                    server_key=secret, iterations=4096),
                rec("UserScramCredentialRecord", name="alice", mechanism=2, salt=secret, stored_key=secret,
                    server_key=secret, iterations=4096))
    j = image_to_json(img)
    assert j["scram"] == {"SCRAM-SHA-256": ["alice"], "SCRAM-SHA-512": ["alice", "bob"]}
    text = json.dumps(j)
    assert secret.hex() not in text and "1337" not in text and "4096" not in text


def test_delegation_tokens_ids_and_owners_only() -> None:
    img = build(rec("DelegationTokenRecord", owner="User:alice", requester="User:bob", renewers=["User:carol"],
                    issue_timestamp=1, max_timestamp=2, expiration_timestamp=3, token_id="tok-1"))
    j = image_to_json(img)
    assert j["delegationTokens"] == {"tok-1": {"owner": "User:alice"}}
    assert "User:bob" not in json.dumps(j) and "User:carol" not in json.dumps(j)


def test_client_quotas_named_as_kafkas_shell_names_them() -> None:
    # ClientQuotasImageNode.clientQuotaEntityToString: clientId, ip, user in that order, "_" between, and
    # backslash and parentheses escaped with a backslash
    img = build(quota([("user", "al(i)ce"), ("client-id", "app\\1")], "producer_byte_rate", 1024.0),
                quota([("ip", "10.0.0.1")], "connection_creation_rate", 5.0),
                quota([("ip", "10.0.0.1")], "other", 1.0),
                quota([("ip", "10.0.0.1")], "other", 0.0, remove=True))
    assert image_to_json(img)["clientQuotas"] == {
        "clientId(app\\\\1)_user(al\\(i\\)ce)": {"producer_byte_rate": 1024.0},
        "ip(10.0.0.1)": {"connection_creation_rate": 5.0},
    }


def test_the_default_quota_entity_reads_default() -> None:
    assert quota_entity_name((("user", None),)) == "user(<default>)"
    assert quota_entity_name((("client-id", None), ("user", "alice"))) == "clientId(<default>)_user(alice)"


def test_controllers_and_the_next_producer_id() -> None:
    endpoint = struct_class("RegisterControllerRecord", "ControllerEndpoint")
    feature = struct_class("RegisterControllerRecord", "ControllerFeature")
    img = build(rec("RegisterControllerRecord", controller_id=3000, incarnation_id=Uuid.of(1, 2),
                    zk_migration_ready=True,
                    end_points=[endpoint(name="CONTROLLER", host="c1", port=9093, security_protocol=1)],
                    features=[feature(name="metadata.version", min_supported_version=1, max_supported_version=21)]),
                rec("ProducerIdsRecord", broker_id=1, broker_epoch=5, next_producer_id=2000))
    j = image_to_json(img)
    assert j["nextProducerId"] == 2000
    assert j["controllers"] == {"3000": {
        "incarnationId": str(Uuid.of(1, 2)), "zkMigrationReady": True,
        "listeners": {"CONTROLLER": {"host": "c1", "port": 9093, "securityProtocol": "SSL"}},
        "supportedFeatures": {"metadata.version": [1, 21]}}}
