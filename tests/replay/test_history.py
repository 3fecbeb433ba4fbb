"""Point-in-time replay over real log directories: Kafka's own, and generated ones with snapshots and images."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metalog.errors import MetalogError
from metalog.replay.diff import diff_images
from metalog.replay.history import MetadataHistory
from metalog.state.jsonimage import image_to_json
from metalog.state.records import image_digest
from tests.conftest import kafka_final_image, load_vectors

SCENARIO = load_vectors()["scenarioJbod"]


@pytest.fixture
def jbod_copy(tmp_path: Path, jbod_dir: Path) -> Path:
    """Kafka's JBOD log with its kraft.version 1 snapshot moved where Kafka keeps snapshots."""
    root = tmp_path / "jbod"
    shutil.copytree(jbod_dir, root)
    for p in (root / "snapshot-kraft-v1").iterdir():
        shutil.copy(p, root / "__cluster_metadata-0" / p.name)
    return root


def test_state_at_the_end_is_kafkas_final_image(jbod_dir: Path) -> None:
    with MetadataHistory(jbod_dir) as h:
        result = h.state_at()
    assert image_to_json(result.image) == kafka_final_image(SCENARIO)
    assert (result.offset, result.start.kind, result.records_replayed) == (24, "empty", 24)


def test_every_offset_shows_the_state_published_at_or_before_it(jbod_dir: Path) -> None:
    """Kafka's timeline is record by record (MetadataDelta); its loader publishes at batch ends
    (MetadataBatchLoader.maybeFlushBatches): an offset shows the timeline at the last batch end at or before it."""
    ends = [b["lastOffset"] for b in SCENARIO["batches"]]
    timeline = {t["offset"]: t["metadataVersion"] for t in SCENARIO["stateTimeline"]}
    with MetadataHistory(jbod_dir) as h:
        for offset in timeline:
            published = max(e for e in ends if e <= offset)
            result = h.state_at(offset)
            assert (result.requested, result.offset) == (offset, published)
            assert image_to_json(result.image)["metadataVersion"] == timeline.get(published)


def test_replay_starts_from_the_kafka_snapshot(jbod_copy: Path) -> None:
    with MetadataHistory(jbod_copy) as h:
        from_snapshot = h.state_at(24)
        from_zero = h.state_at(24, use_snapshots=False)
        assert from_snapshot.start.kind == "checkpoint" and from_snapshot.start.offset == 24
        assert from_snapshot.records_replayed == 0
        assert image_digest(from_snapshot.image) == image_digest(from_zero.image)
        early = h.state_at(10)  # before the snapshot: replayed from the start
        assert early.start.kind == "empty" and early.records_replayed == 10


def test_saved_state_image_is_used_and_gives_the_same_state(jbod_copy: Path) -> None:
    with MetadataHistory(jbod_copy) as h:
        at_16 = h.state_at(16)
        path = h.save_image(at_16)
        assert path.name == "00000000000000000016.image"
        later = h.state_at(20)
        assert later.start.kind == "image" and later.start.offset == 16 and later.records_replayed == 4
        assert image_digest(later.image) == image_digest(h.state_at(20, use_snapshots=False).image)


def test_an_image_of_a_state_asked_for_inside_a_batch_is_named_by_its_batch_end(jbod_copy: Path) -> None:
    with MetadataHistory(jbod_copy) as h:
        at_noop = h.state_at(17)  # offset 17, a NoOpRecord, opens batch 17..20: the state published at 16
        assert (at_noop.requested, at_noop.offset, at_noop.image.offset) == (17, 16, 16)
        assert h.save_image(at_noop).name == "00000000000000000016.image"
        assert h.state_at(18).start.offset == 16


def test_write_images_in_one_pass(jbod_copy: Path) -> None:
    with MetadataHistory(jbod_copy) as h:
        paths = h.write_images(every=10)
        # at the end of the first batch that reaches each multiple of 10
        ends = [b["lastOffset"] for b in SCENARIO["batches"]]
        expected = [min(e for e in ends if e >= m) for m in (10, 20)]
        assert [int(p.name.split(".")[0]) for p in paths] == expected
        assert h.write_images(every=10) == []  # already there
        result = h.state_at(23)  # the kraft.version 1 checkpoint covers 24
        assert (result.start.kind, result.start.offset) == ("image", expected[-1])
        assert image_digest(result.image) == image_digest(h.state_at(23, use_snapshots=False).image)


def test_time_maps_to_offsets_through_batch_timestamps(jbod_dir: Path) -> None:
    batches = [b for b in SCENARIO["batches"] if not b["isControlBatch"]]
    with MetadataHistory(jbod_dir) as h:
        for b in batches:
            assert h.offset_at_time(b["maxTimestamp"]) == b["lastOffset"]
        assert h.offset_at_time(batches[0]["maxTimestamp"] - 1) == 0  # only the control batch at offset 0
        assert h.offset_at_time(batches[-1]["maxTimestamp"] + 10**6) == 24


def test_states_after_every_batch(jbod_dir: Path) -> None:
    with MetadataHistory(jbod_dir) as h:
        states = list(h.states())
    # every batch end publishes, the control batch at offset 0 (the empty state) too
    assert [s.offset for s in states] == [b["lastOffset"] for b in SCENARIO["batches"]]
    assert [s.timestamp for s in states] == [b["maxTimestamp"] for b in SCENARIO["batches"]]
    assert all(s.image.offset == s.offset for s in states)
    assert image_to_json(states[-1].image) == kafka_final_image(SCENARIO)


def test_diff_names_what_changed(jbod_dir: Path) -> None:
    with MetadataHistory(jbod_dir) as h:
        d = diff_images(h.state_at(12).image, h.state_at(24).image)
    assert d.brokers_fenced == [3]
    assert d.dirs_lost == {1: ["bCF3l0RIQjOKhUqgbivHZA"]}
    assert [(p.topic, p.partition) for p in d.partitions] == [("foo", 0), ("foo", 1)]
    assert d.partitions[0].changes["leader"] == (1, 2)
    assert d.topics_created == [] and d.topics_removed == []
    with MetadataHistory(jbod_dir) as h:
        assert diff_images(h.state_at(17).image, h.state_at(19).image).empty  # both inside 17..20: 16's state
        d = diff_images(h.state_at(17).image, h.state_at(20).image)
    assert d.topics_created == ["bar"]


def test_bad_targets_are_clear(jbod_dir: Path) -> None:
    with MetadataHistory(jbod_dir) as h, pytest.raises(MetalogError, match="past the end of the log"):
        h.state_at(25)
