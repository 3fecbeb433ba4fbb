"""Replay's fused path (MetadataLog.scan_into -> MetadataLoader.replay_value) equals loading decoded records
batch by batch through MetadataLoader.load_batch, for random histories written in random batch shapes."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import message_class
from metalog.codec.framing import encode_metadata_record
from metalog.errors import LogError, ReplayError
from metalog.generate import HistoryGenerator, HistorySettings
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.replay.history import MetadataHistory
from metalog.state import MetadataLoader
from metalog.state.jsonimage import image_to_json
from metalog.state.records import image_digest

TS = 1700000000000


Batch = tuple[int, int, int, bool]  # base offset, last offset, max timestamp, is control


def write_log(root: Path, records: list[tuple[Any, int]], sizes: list[int], gzip: list[bool],
              control_every: int) -> tuple[list[tuple[int, Any]], list[Batch]]:
    """The records as batches of the given sizes (some gzip, control batches between; the log ends a batch at
    an abort); returns (offset, record) of every data record and every batch as written."""
    placed: list[tuple[int, Any]] = []
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        i = n = 0
        while i < len(records):
            if control_every and n % control_every == control_every - 1:
                log.append_control([(message_class("LeaderChangeMessage")(leader_id=1, voters=[]), 0)],
                                   timestamp=TS + n)
            size = sizes[n % len(sizes)]
            chunk = records[i:i + size]
            base = log.log_end_offset
            log.append(chunk, timestamp=TS + n, batch_size=size, compression="gzip" if gzip[n % len(gzip)] else "none")
            placed += [(base + k, record) for k, (record, _) in enumerate(chunk)]
            i += size
            n += 1
        batches = [(b[0], b[1], b[2], b[3]) for b in log.scan(0)]
    return placed, batches


def batchwise(placed: list[tuple[int, Any]], batches: list[Batch], target: int) -> MetadataLoader:
    """Decoded records loaded batch by batch (the loader's batch-level entry) through the batch ending at
    ``target``."""
    loader, by_offset = MetadataLoader(), dict(placed)
    for base, last, _, control in batches:
        if last > target:
            break
        loader.load_batch(base, [] if control else [by_offset[o] for o in range(base, last + 1)], last_offset=last,
                          is_control=control)
    return loader


@settings(max_examples=25)  # each example writes a log of up to 300 records and replays it both ways: ~0.1 s
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300),
       sizes=st.lists(st.sampled_from([1, 1, 1, 2, 3, 17, 40]), min_size=1, max_size=6),
       gzip=st.lists(st.booleans(), min_size=1, max_size=4), control_every=st.integers(0, 7),
       cuts=st.lists(st.floats(0, 1), min_size=1, max_size=3), every=st.integers(5, 60))
def test_fused_replay_equals_batch_by_batch(seed: int, n: int, sizes: list[int], gzip: list[bool],
                                            control_every: int, cuts: list[float], every: int) -> None:
    """At every batch end, the fused path (scan_into -> replay_value, end_batch once) publishes what loading the
    decoded records batch by batch publishes (offsets inside batches: tests/replay/test_published_points.py)."""
    gen = HistoryGenerator(seed, HistorySettings(brokers=4, topics=3, partitions=3, records=n))
    records = [(record, version) for _, record, version in gen.records()]
    with tempfile.TemporaryDirectory() as tmp:
        placed, batches = write_log(Path(tmp), records, sizes, gzip, control_every)
        ends = [last for _, last, _, _ in batches]
        with MetadataHistory(tmp) as h:
            targets = sorted({ends[int(c * (len(ends) - 1))] for c in cuts} | {h.end_offset})
            h.write_images(every)  # replay from images too: they are written at published batch ends
            for target in targets:
                expected = batchwise(placed, batches, target)
                for use_snapshots in (False, True):
                    got = h.state_at(target, use_snapshots=use_snapshots)
                    assert image_digest(got.image) == image_digest(expected.image)
                    assert image_to_json(got.image) == image_to_json(expected.image)
                    assert got.offset == expected.image.offset and got.requested == target
                    assert got.open_transaction == expected.in_transaction
                    assert got.timestamp == next(ts for b, last, ts, _ in batches if b <= got.offset <= last)
                plain = h.state_at(target, use_snapshots=False)
                assert plain.records_replayed == len([o for o, _ in placed if o <= target])
            last = list(h.states())[-1]
            assert image_digest(last.image) == image_digest(batchwise(placed, batches, h.end_offset).image)


def _log_with(tmp_path: Path, values: list[bytes]) -> Path:
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        log.append([encode_metadata_record(message_class("NoOpRecord")(), 0)] * 3, timestamp=TS)
        for v in values:
            log.append([v], timestamp=TS)
    return tmp_path


def test_an_undecodable_value_is_named_by_offset_and_file(tmp_path: Path) -> None:
    root = _log_with(tmp_path, [b"\x01\x05\x01\xff\xff"])  # a PartitionChangeRecord v1 cut short
    with MetadataHistory(root) as h, pytest.raises(LogError, match=r"offset 3: .*PartitionChangeRecord") as e:
        h.state_at(use_snapshots=False)
    assert e.value.file is not None and e.value.file.endswith(".log")


def test_a_record_that_cannot_apply_is_named_by_offset_and_type(tmp_path: Path) -> None:
    change = message_class("PartitionChangeRecord")(partition_id=0, topic_id=b"\x01" * 16)
    root = _log_with(tmp_path, [encode_metadata_record(change, 1)])
    with MetadataHistory(root) as h, pytest.raises(ReplayError, match="unknown topic id") as e:
        h.state_at(use_snapshots=False)
    assert (e.value.offset, e.value.record) == (3, "PARTITION_CHANGE_RECORD")


def test_an_unmatched_transaction_end_is_named_by_offset(tmp_path: Path) -> None:
    end = encode_metadata_record(message_class("EndTransactionRecord")(), 0)
    with MetadataHistory(_log_with(tmp_path, [end])) as h, pytest.raises(ReplayError, match="no transaction") as e:
        h.state_at(use_snapshots=False)
    assert (e.value.offset, e.value.record) == (3, "END_TRANSACTION_RECORD")


def test_replay_value_takes_the_checked_path_for_rare_forms() -> None:
    """A two-byte varint version byte, trailing bytes, a null value: the checked decoder decides."""
    loader = MetadataLoader()
    value = encode_metadata_record(message_class("NoOpRecord")(), 0)
    loader.replay_value(value + b"", 7)
    assert loader.offset == 7
    with pytest.raises(Exception, match="NoOpRecord"):
        loader.replay_value(value + b"\x00", 8)
    with pytest.raises(Exception, match="no value"):
        loader.replay_value(None, 9)
    feature = message_class("FeatureLevelRecord")(name="metadata.version", feature_level=21)
    loader.replay_value(encode_metadata_record(feature, 0), 10)
    loader.end_batch(10)
    assert loader.image.features.metadata_version == 21 and loader.image.offset == 10


def test_an_image_after_a_transaction_is_named_by_its_end(tmp_path: Path) -> None:
    """The state after EndTransactionRecord holds the transaction: an image of it named by an earlier offset
    would make a replay from there meet the end without its begin."""
    feature = message_class("FeatureLevelRecord")(name="metadata.version", feature_level=21)
    root = _log_with(tmp_path, [encode_metadata_record(message_class("BeginTransactionRecord")(name="t"), 0),
                                encode_metadata_record(feature, 0),
                                encode_metadata_record(message_class("EndTransactionRecord")(), 0)])
    with MetadataHistory(root) as h:
        assert [p.name for p in h.write_images(5)] == [f"{5:020d}.image"]  # the end is at offset 5
        h.save_image(h.state_at(4))  # inside the transaction: the state before it began
        assert [(p.kind, p.offset) for p in h.start_points()] == [("empty", -1), ("image", 2), ("image", 5)]
        got = h.state_at(5)
        assert (got.start.offset, got.image.features.metadata_version) == (5, 21)
