"""Kafka-written batches and files: every field as Kafka decoded it, and re-encoding gives Kafka's bytes."""

from __future__ import annotations

from typing import Any

import pytest

from metalog.log.batch import RecordBatch
from metalog.log.builder import build_control_batch, build_data_batch, rebuild
from metalog.log.control import ControlType, decode_control
from metalog.log.dump import control_json, payload_json
from metalog.log.reader import iter_batches, read_file_batches


def assert_batch_matches(batch: RecordBatch, expected: dict[str, Any]) -> None:
    assert batch.position == expected["filePosition"]
    assert batch.base_offset == expected["baseOffset"]
    assert batch.last_offset == expected["lastOffset"]
    assert batch.size_in_bytes == expected["sizeInBytes"]
    assert batch.batch_length == expected["batchLengthField"]
    assert batch.partition_leader_epoch == expected["partitionLeaderEpoch"]
    assert batch.magic == expected["magic"]
    assert batch.crc == expected["crc"]
    assert batch.is_valid() is expected["crcValid"]
    assert batch.compression.kafka_name == expected["compression"]
    assert batch.timestamp_type == expected["timestampType"]
    assert batch.is_control is expected["isControlBatch"]
    assert batch.is_transactional is expected["isTransactional"]
    assert batch.base_timestamp == expected["baseTimestamp"]
    assert batch.max_timestamp == expected["maxTimestamp"]
    assert batch.producer_id == expected["producerId"]
    assert batch.producer_epoch == expected["producerEpoch"]
    assert batch.base_sequence == expected["baseSequence"]
    assert batch.records_count == expected["recordCount"]
    assert batch.attributes.to_bytes(2, "big").hex() == expected["attributesHex"]
    assert bytes(batch.raw()).hex() == expected["hex"]
    records = batch.records()
    assert len(records) == len(expected["records"])
    for rec, exp in zip(records, expected["records"], strict=True):
        assert rec.offset == exp["offset"]
        assert rec.timestamp == exp["timestamp"]
        assert (None if rec.key is None else rec.key.hex()) == exp["keyHex"]
        assert rec.value.hex() == exp["valueHex"]
        assert len(rec.headers) == exp["headers"]
        if batch.is_control:
            assert decode_control(rec.key, rec.value).type.name == exp["controlType"]
            assert control_json(rec)["type"] == exp["controlType"]
        else:
            payload = payload_json(rec)
            assert (payload["type"], payload["version"], payload["data"]) == (exp["type"], exp["version"], exp["data"])


def test_segment_file_field_by_field(kafka_vectors, jbod_dir):
    scenario = kafka_vectors["scenarioJbod"]
    path = jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    assert path.read_bytes().hex() == scenario["segmentHex"]
    batches = list(read_file_batches(path))
    assert len(batches) == len(scenario["batches"])
    for batch, expected in zip(batches, scenario["batches"], strict=True):
        assert_batch_matches(batch, expected)
        assert batch.source == str(path)


def test_segment_reencodes_to_kafkas_bytes(kafka_vectors):
    data = bytes.fromhex(kafka_vectors["scenarioJbod"]["segmentHex"])
    out = b""
    for batch in iter_batches(data):
        out += rebuild(batch)
        records = batch.records()
        if batch.is_control:
            again = build_control_batch(batch.base_offset, [(r.key, r.value) for r in records],
                                        epoch=batch.partition_leader_epoch, timestamp=batch.max_timestamp)
        else:  # KRaft's BatchBuilder conventions reproduce Kafka's data batches exactly
            again = build_data_batch(batch.base_offset, [r.value for r in records],
                                     epoch=batch.partition_leader_epoch, timestamp=batch.max_timestamp)
        assert again == bytes(batch.raw())
    assert out == data


def test_gzip_batch(kafka_vectors):
    expected = kafka_vectors["gzipBatch"]["batches"][0]
    data = bytes.fromhex(expected["hex"])
    (batch,) = iter_batches(data)
    assert_batch_matches(batch, expected)
    assert rebuild(batch) == data
    values = [r.value for r in batch.records()]
    assert build_data_batch(0, values, epoch=1, timestamp=expected["maxTimestamp"], compression="gzip") == data


@pytest.mark.parametrize("name", ["snapshot-kraft-v0", "snapshot-kraft-v1"])
def test_snapshot_batches_field_by_field(kafka_vectors, jbod_dir, name):
    snap = kafka_vectors["scenarioJbod"][name]
    path = jbod_dir / name / "00000000000000000025-0000000001.checkpoint"
    assert path.read_bytes().hex() == snap["hex"]
    batches = list(read_file_batches(path))
    for batch, expected in zip(batches, snap["batches"], strict=True):
        assert_batch_matches(batch, expected)
        assert rebuild(batch) == bytes(batch.raw())
    assert len(batches) == len(snap["batches"])


_CONTROL_TYPES = {"LeaderChangeMessage": "LEADER_CHANGE", "SnapshotHeaderRecord": "SNAPSHOT_HEADER",
                  "SnapshotFooterRecord": "SNAPSHOT_FOOTER", "KRaftVersionRecord": "KRAFT_VERSION",
                  "VotersRecord": "KRAFT_VOTERS"}


def test_control_values_match_kafkas(kafka_vectors):
    from metalog.codec import message_class
    from metalog.log.control import encode_control

    keys_seen = 0
    for vec in kafka_vectors["controlRecordValues"]:
        msg = message_class(vec["message"]).from_json(vec["json"], vec["version"])
        key, value = encode_control(msg, vec["version"])
        control_type = ControlType[_CONTROL_TYPES[vec["message"]]]
        assert key == bytes([0, 0, 0, control_type])
        if "key = " in vec["note"]:
            assert key.hex() == vec["note"].split("key = ")[1][:8]
            keys_seen += 1
        assert value.hex() == vec["hex"]
        decoded = decode_control(key, value)
        assert (decoded.type, decoded.version, decoded.message) == (control_type, vec["version"], msg)
    assert keys_seen >= 4
