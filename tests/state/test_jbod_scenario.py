"""Kafka's own KIP-858 scenario: replaying its log gives Kafka's state, record by record."""

from __future__ import annotations

from typing import Any

import pytest

from metalog.codec.framing import decode_metadata_record
from metalog.state import MetadataLoader
from metalog.state.enums import record_type_name
from metalog.state.jsonimage import image_to_json
from metalog.state.records import image_digest, image_records
from tests.conftest import kafka_final_image, load_vectors

SCENARIO = load_vectors()["scenarioJbod"]


def log_records(batches: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    """(offset, record) for every metadata record of the data batches, decoded from Kafka's bytes."""
    return [(r["offset"], decode_metadata_record(bytes.fromhex(r["valueHex"])).message)
            for b in batches if not b["isControlBatch"] for r in b["records"]]


RECORDS = log_records(SCENARIO["batches"])


def test_state_timeline_record_by_record() -> None:
    loader = MetadataLoader()
    timeline = SCENARIO["stateTimeline"]
    assert [o for o, _ in RECORDS] == [t["offset"] for t in timeline]
    for (offset, record), expected in zip(RECORDS, timeline, strict=True):
        loader.load_batch(offset, [record])  # Kafka's timeline applies one record at a time: one per batch here
        state = image_to_json(loader.image)
        assert record_type_name(record.NAME) == expected["type"]
        assert (state["metadataVersion"], state["zkMigrationState"]) == \
            (expected["metadataVersion"], expected["zkMigrationState"]), offset


def test_final_image_is_kafkas() -> None:
    image = MetadataLoader().replay_all(RECORDS)
    assert image_to_json(image) == kafka_final_image(SCENARIO)
    assert image.offset == RECORDS[-1][0]


def test_one_delta_over_the_whole_log_gives_the_per_record_image() -> None:
    # Kafka's single-delta replay keeps the configs of a topic created and removed in the same delta
    # (finalImageSingleDelta has TOPIC/bar); metalog's delta removes them, as per-record replay does.
    assert SCENARIO["finalImageSameWithSingleDelta"] is False
    from metalog.state import MetadataDelta
    from metalog.state.image import EMPTY

    delta = MetadataDelta(EMPTY)
    for offset, record in RECORDS:
        delta.replay(record, offset)
    assert image_to_json(delta.apply()) == kafka_final_image(SCENARIO)


def test_image_written_as_records_is_kafkas_image_records() -> None:
    image = MetadataLoader().replay_all(RECORDS)
    ours = [{"type": record_type_name(r.NAME), "version": v, "data": r.to_json(v)} for r, v in image_records(image)]
    assert ours == SCENARIO["imageRecords"]


@pytest.mark.parametrize("snapshot", ["snapshot-kraft-v0", "snapshot-kraft-v1"])
def test_kafka_snapshot_loads_to_the_same_image(snapshot: str) -> None:
    snap = SCENARIO[snapshot]
    records = [r for _, r in log_records(snap["batches"])]
    image = MetadataLoader().load_snapshot(records, snap["snapshotIdOffset"] - 1)
    assert image_to_json(image) == kafka_final_image(SCENARIO)
    assert image_digest(image) == image_digest(MetadataLoader().replay_all(RECORDS))


def test_our_snapshot_reloads_to_the_same_image() -> None:
    image = MetadataLoader().replay_all(RECORDS)
    reloaded = MetadataLoader().load_snapshot([r for r, _ in image_records(image)], image.offset)
    assert image_to_json(reloaded) == image_to_json(image)
    assert image_digest(reloaded) == image_digest(image)
