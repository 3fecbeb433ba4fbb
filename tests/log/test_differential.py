"""Differential: our batch reader and writer against kafka-python's and aiokafka's on random batches."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.errors import CorruptBatchError
from metalog.log.batch import Record, RecordArea, RecordBatch, _decode_kraft_records, _decode_records
from metalog.log.builder import BatchFields, build_batch, build_data_batch
from metalog.log.compression import Compression

kafka_records = pytest.importorskip("kafka.record.default_records")
aiokafka_records = pytest.importorskip("aiokafka.record.default_records")

timestamps = st.integers(0, 2**41)
small_bytes = st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)), max_size=3)
record_lists = st.lists(st.tuples(st.integers(0, 5000), st.none() | small_bytes, st.none() | small_bytes, headers),
                        min_size=1, max_size=40)
CODECS = [c for c in Compression if c is Compression.NONE or kafka_records.DefaultRecordBatchBuilder(
    magic=2, compression_type=c.value, is_transactional=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
    batch_size=1)._assert_has_codec(c.value) is None]


def _kafka_python_batch(codec: int, base_ts: int, recs: list, transactional: bool, pid: int) -> bytes:
    builder = kafka_records.DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=int(transactional), producer_id=pid,
        producer_epoch=3 if pid >= 0 else -1, base_sequence=7 if pid >= 0 else -1, batch_size=1 << 24)
    for i, (dt, key, value, hdrs) in enumerate(recs):
        builder.append(i, base_ts + dt, key, value, hdrs)
    return bytes(builder.build())


@given(codec=st.sampled_from(CODECS), base_ts=timestamps, recs=record_lists, transactional=st.booleans(),
       pid=st.sampled_from([-1, 12345]))
def test_we_read_what_kafka_python_writes(codec, base_ts, recs, transactional, pid):
    data = _kafka_python_batch(codec.value, base_ts, recs, transactional, pid)
    ours = RecordBatch(data)
    ours.ensure_valid()
    theirs = kafka_records.DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert (ours.base_offset, ours.crc, ours.attributes, ours.last_offset_delta, ours.producer_id,
            ours.producer_epoch, ours.base_sequence, ours.records_count, ours.max_timestamp) == (
        theirs.base_offset, theirs.crc, theirs.attributes, theirs.last_offset_delta, theirs.producer_id,
        theirs.producer_epoch, theirs.base_sequence, len(recs), theirs.max_timestamp)
    # kafka-python keeps a batch uncompressed when compression would not make it smaller
    assert ours.compression == theirs.compression_type and ours.is_transactional == transactional
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in ours.decode_records()]
    want = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == want
    if ours.compression in (Compression.NONE, Compression.GZIP):  # what we write: identical bytes uncompressed
        rebuilt = build_batch(0, ours.decode_records(), BatchFields(
            compression=ours.compression, is_transactional=transactional, producer_id=pid,
            producer_epoch=ours.producer_epoch, base_sequence=ours.base_sequence,
            partition_leader_epoch=ours.partition_leader_epoch))
        if ours.compression is Compression.NONE:
            assert rebuilt == data
        assert [tuple(r) for r in RecordBatch(rebuilt).decode_records()] == [tuple(r) for r in ours.decode_records()]


@given(base=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1), ts=timestamps,
       values=st.lists(st.binary(min_size=1, max_size=20000), min_size=1, max_size=30),
       codec=st.sampled_from([Compression.NONE, Compression.GZIP]))
def test_peers_read_what_we_write(base, epoch, ts, values, codec):
    data = build_data_batch(base, values, epoch=epoch, timestamp=ts, compression=codec)
    for module in (kafka_records, aiokafka_records):
        theirs = module.DefaultRecordBatch(data)
        assert theirs.validate_crc()
        assert theirs.base_offset == base and theirs.compression_type == codec.value
        assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
            (base + i, ts, None, v) for i, v in enumerate(values)]
    ours = RecordBatch(data)
    ours.ensure_valid()
    assert [r.value for r in ours.decode_records()] == values


@given(recs=record_lists, base_ts=timestamps)
def test_kraft_fast_path_agrees_with_the_general_decoder(recs, base_ts):
    records = [Record(100 + i, base_ts + (dt if i % 3 else 0), key if i % 2 else None, value,
                      tuple(h) if i % 5 == 1 else ()) for i, (dt, key, value, h) in enumerate(recs)]
    data = build_batch(100, records)
    batch = RecordBatch(data)
    area = RecordArea(data, 61, len(data), batch.records_count, 100, batch.base_timestamp, None)
    general = _decode_records(area)
    assert batch.decode_records() == general == records
    fast = _decode_kraft_records(data, 61, len(data), batch.records_count, 100, batch.base_timestamp)
    kraft_form = all(r.key is None and not r.headers and r.timestamp == batch.base_timestamp and r.value
                     for r in records)
    assert (fast == general) if kraft_form else fast is None


@given(values=st.lists(st.binary(min_size=1, max_size=50), min_size=1, max_size=10), data=st.data())
def test_a_damaged_batch_fails_validation_or_decodes_exactly(values, data):
    raw = bytearray(build_data_batch(5, values, epoch=2, timestamp=1700000000000))
    i = data.draw(st.integers(21, len(raw) - 1))  # inside the CRC's range
    raw[i] ^= data.draw(st.integers(1, 255))
    batch = RecordBatch(bytes(raw))
    with pytest.raises(CorruptBatchError, match="CRC-32C mismatch"):
        batch.ensure_valid()


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_kafka_python_writes(codec):
    recs = [(i, None, b"PartitionRecord-%d " % i * 20, []) for i in range(200)]
    data = _kafka_python_batch(codec.value, 1700000000000, recs, False, -1)
    batch = RecordBatch(data)
    batch.ensure_valid()
    assert batch.compression == codec
    assert [r.value for r in batch.decode_records()] == [v for _, _, v, _ in recs]
    assert len(data) < sum(len(v) for _, _, v, _ in recs) or codec is Compression.NONE


def test_the_optional_codecs_are_installed_here():
    # CI installs the compression extra; without it snappy, lz4 and zstd batches could not be read.
    assert set(CODECS) == set(Compression)
