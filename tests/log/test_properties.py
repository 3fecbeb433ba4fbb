"""Hypothesis: append/read round trips across segment rolls with tiny segments, reopened in between."""

from __future__ import annotations

import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import message_class
from metalog.codec.framing import encode_metadata_record
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.verify import verify_log


def feature_level(name: str) -> bytes:
    return encode_metadata_record(message_class("FeatureLevelRecord")(name=name, feature_level=len(name)), 0)


values = st.text(max_size=60).map(feature_level)
appends = st.lists(st.tuples(st.lists(values, min_size=1, max_size=6),
                             st.integers(0, 3), st.booleans()), min_size=1, max_size=12)


@settings(max_examples=40)  # each example writes, rolls and rereads a log on disk: up to ~0.4 s
@given(appends=appends, segment_bytes=st.integers(100, 600), interval=st.integers(0, 300))
def test_append_read_round_trip_across_rolls(appends, segment_bytes, interval):
    with tempfile.TemporaryDirectory() as d:
        expected: list[tuple[int, bytes, int]] = []
        starts = []
        epoch = 1
        config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval, durability=Durability.APPEND)
        log = MetadataLog.open(d, Mode.CREATE, config=config)
        try:
            for values, epoch_step, reopen in appends:
                epoch += epoch_step
                starts.append(len(expected))
                for b in log.append(values, epoch=epoch, timestamp=1700000000000 + len(expected), batch_size=2):
                    assert b.committed and b.epoch == epoch
                expected += [(len(expected) + i, v, epoch) for i, v in enumerate(values)]
                if reopen:
                    log.close()
                    log = MetadataLog.open(d, Mode.WRITE, config=config)
                    assert not log.recovery.truncated and not log.recovery.rebuilt
            assert log.log_end_offset == len(expected)
            got = [(r.offset, r.value) for r in log.records()]
            assert got == [(o, v) for o, v, _ in expected]
            for start in {0, len(expected) // 2, len(expected) - 1}:
                assert [r.offset for r in log.records(start)] == list(range(start, len(expected)))
            for batch in log.batches():
                assert batch.partition_leader_epoch == expected[batch.base_offset][2]
            for start in starts:  # each append's timestamp is 1700000000000 + its first offset
                assert log.offset_for_timestamp(1700000000000 + start) == start
            assert log.offset_for_timestamp(1700000000000 + len(expected)) is None
        finally:
            log.close()
        assert verify_log(d).ok
