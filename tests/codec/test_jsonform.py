"""Kafka's JsonConverter form: what is left out, and clear errors for JSON that is not a message."""

from __future__ import annotations

import pytest

from metalog.codec import DecodeError, Uuid, message_class

PCR = message_class("PartitionChangeRecord")
TOPIC_ID = Uuid.parse("UXyU9i5ARn6W00ON2taeWA")


def test_tagged_fields_at_default_are_left_out() -> None:
    assert PCR(partition_id=1, topic_id=TOPIC_ID).to_json(1) == {"partitionId": 1, "topicId": str(TOPIC_ID)}
    data = PCR(partition_id=1, topic_id=TOPIC_ID, leader=3, isr=[3]).to_json(1)
    assert data == {"partitionId": 1, "topicId": str(TOPIC_ID), "isr": [3], "leader": 3}


def test_fields_the_version_lacks_are_left_out() -> None:
    record = message_class("RegisterBrokerRecord")(broker_id=1, in_controlled_shutdown=True)
    assert "inControlledShutdown" not in record.to_json(0)
    assert record.to_json(1)["inControlledShutdown"] is True


def test_bytes_are_base64() -> None:
    scram = message_class("UserScramCredentialRecord")(name="u", salt=b"\x00\xff")
    assert scram.to_json(0)["salt"] == "AP8="
    assert message_class("UserScramCredentialRecord").from_json(scram.to_json(0), 0) == scram


@pytest.mark.parametrize(("data", "field", "reason"), [
    ({"partitionId": 1}, "topicId", "mandatory in version 1"),
    ({"partitionId": 1, "topicId": "nope"}, "topicId", "22 characters"),
    ({"partitionId": "1", "topicId": str(TOPIC_ID)}, "partitionId", "expected an integer"),
    ({"partitionId": 2**31, "topicId": str(TOPIC_ID)}, "partitionId", "out of range for int32"),
    ({"partitionId": True, "topicId": str(TOPIC_ID)}, "partitionId", "expected an integer"),
    ({"partitionId": 1, "topicId": str(TOPIC_ID), "isr": [1, "x"]}, "isr[1]", "expected an integer"),
    ({"partitionId": 1, "topicId": str(TOPIC_ID), "isr": 3}, "isr", "expected a JSON array"),
    ({"partitionId": 1, "topicId": str(TOPIC_ID), "partitionID": 2}, "(message)", "unknown field 'partitionID'"),
    ({"partitionId": None, "topicId": str(TOPIC_ID)}, "partitionId", "not nullable"),
])
def test_bad_json_is_named(data: dict, field: str, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason) as e:
        PCR.from_json(data, 1)
    assert e.value.field == field
    assert (e.value.message, e.value.version) == ("PartitionChangeRecord", 1)


def test_nested_paths_in_errors() -> None:
    data = {"brokerId": 1, "incarnationId": str(TOPIC_ID), "brokerEpoch": 1,
            "endPoints": [{"name": "P", "host": "h", "port": 70000, "securityProtocol": 0}],
            "features": [], "rack": None, "fenced": True}
    with pytest.raises(DecodeError, match="out of range for uint16") as e:
        message_class("RegisterBrokerRecord").from_json(data, 0)
    assert e.value.field == "endPoints[0].port"


def test_a_json_object_is_required() -> None:
    with pytest.raises(DecodeError, match="expected a JSON object"):
        PCR.from_json([1, 2], 1)  # type: ignore[arg-type]
