"""The compiled log core and the pure one are the same reader: for valid batches of every shape metalog and
Kafka write, and for damaged ones, both give equal records (the same offsets, timestamps, keys, values,
headers and attributes, of the same types) or the same error, with the same text, file and byte.

The pure functions are the reference (``metalog.log.batch._decode_records``); their compiled twins live in
``metalog.log.compiled``. These tests skip where the compiled log core does not run (``METALOG_PURE=1``, or no
C compiler at install); ``METALOG_REQUIRE_COMPILED=1`` (CI's first run, see tests/conftest.py) makes that a
failure instead.
"""

from __future__ import annotations

import gc
import mmap
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.bench import cores
from metalog.bench.cores import pure_log_core
from metalog.errors import MetalogError
from metalog.log import batch as batch_module
from metalog.log.batch import Record, RecordArea, RecordBatch
from metalog.log.builder import BatchFields, build_batch, build_control_batch, build_data_batch
from metalog.log.compression import Compression
from metalog.log.control import encode_control
from metalog.log.header import HEADER_SIZE
from metalog.log.reader import iter_batches
from tests.log.damage import DAMAGES, PARTITION_DIR, BatchAt, build_log, leader_change
from tests.log.test_damage_property import answers
from tests.quick import examples
from tests.state.histories import RECORD_TYPES, histories, record_values

pytestmark = pytest.mark.skipif(not cores.compiled_log_core(), reason=f"log core: {cores.log_status()}")

# whole record batches are large inputs by design: with the quick loop's smaller budget, Hypothesis' data_too_large
# health check (counted over the first draws) failed the run on a draw of large batches, not on metalog
DIFFERENTIAL = settings(max_examples=examples(150), deadline=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                               HealthCheck.data_too_large])
COMPILED_DECODE = batch_module.DECODE_RECORDS.compiled


def _codecs() -> list[Compression]:
    """The codecs this machine reads (none and gzip always; snappy, lz4 and zstd with the compression extra)."""
    out = []
    for codec in Compression:
        try:
            build_batch(0, [Record(0, 0, None, b"x")], BatchFields(compression=codec))
        except MetalogError:
            continue
        out.append(codec)
    return out


CODECS = _codecs()


# ---- the two paths, and what "the same" means ----------------------------------------------------------
def outcome(read: Callable[[], list[Record]]) -> tuple[str, Any]:
    """("records", [(field, type) ...] per record) or ("error", the error's type, text, file and byte)."""
    try:
        records = read()
    except MetalogError as e:
        return "error", (type(e).__name__, str(e), getattr(e, "file", None), getattr(e, "position", None))
    return "records", [(type(r), [(f, type(f)) for f in r], [type(h) for h in r.headers]) for r in records]


def both(read: Callable[[], Any]) -> tuple[Any, Any]:
    """``read()`` on the compiled log core, then on the pure one."""
    compiled = outcome(read)
    with pure_log_core():
        pure = outcome(read)
    return compiled, pure


def records_of(data: bytes, kind: str, method: str = "records") -> Callable[[], list[Record]]:
    """Every record of the batch at the start of ``data``, read from a buffer of ``kind``: by ``records`` (KRaft's
    rules applied) or ``decode_records`` (any form Kafka writes)."""
    def read() -> list[Record]:
        if kind == "mmap":  # closed when collected: an error's traceback may still hold a view of it
            m = mmap.mmap(-1, max(len(data), 1))
            m[:len(data)] = data
            return getattr(RecordBatch(m[:0] if not data else m, 0, source="seg.log"), method)()
        buf = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}[kind]
        return getattr(RecordBatch(buf, 0, source="seg.log"), method)()
    return read


# ---- batches of every shape ----------------------------------------------------------------------------
values = st.none() | st.binary(max_size=200) | st.binary(min_size=8000, max_size=9000)
headers = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=12)), max_size=3).map(tuple)


@st.composite
def general_batches(draw: st.DrawFn) -> bytes:
    """A batch through the general writer: keys, headers, attributes, any deltas, log-append time, compression,
    control and transactional flags."""
    base = draw(st.integers(0, 2**40))
    base_ts = draw(st.integers(-1, 2**41))
    n = draw(st.integers(1, 12))
    offsets = sorted(draw(st.lists(st.integers(0, 70_000), min_size=n, max_size=n, unique=True)))
    records = [Record(base + o, base_ts + draw(st.integers(-(2**40), 2**40)), draw(values), draw(values),
                      draw(headers), draw(st.integers(0, 255))) for o in offsets]
    return build_batch(base, records, BatchFields(
        compression=draw(st.sampled_from(CODECS)), base_timestamp=base_ts,
        log_append_time=draw(st.none() | st.integers(0, 2**41)), is_control=draw(st.booleans()),
        is_transactional=draw(st.booleans()), partition_leader_epoch=draw(st.integers(-1, 9))))


@st.composite
def kraft_batches(draw: st.DrawFn) -> bytes:
    """A batch as KRaft's BatchBuilder writes it: one record or many, null keys, values not empty, no headers."""
    vals = draw(st.lists(st.binary(min_size=1, max_size=300) | st.binary(min_size=8000, max_size=8300), min_size=1,
                         max_size=draw(st.sampled_from([1, 3, 200]))))
    return build_data_batch(draw(st.integers(0, 2**40)), vals, epoch=draw(st.integers(0, 9)),
                            timestamp=draw(st.integers(0, 2**41)), compression=draw(st.sampled_from(CODECS)))


@st.composite
def control_batches(draw: st.DrawFn) -> bytes:
    pairs = draw(st.lists(st.tuples(st.binary(min_size=4, max_size=4), st.binary(max_size=40)), min_size=1,
                          max_size=3))
    return build_control_batch(draw(st.integers(0, 2**40)), pairs, epoch=1, timestamp=draw(st.integers(0, 2**41)))


@st.composite
def flagged_kraft_batches(draw: st.DrawFn) -> bytes:
    """A KRaft data batch with the control bit set (or a LeaderChange control batch without it), the CRC made right:
    a batch KRaft's reader refuses."""
    from tests.log.hostile import attributes

    return attributes(draw(kraft_batches()), set_bits=0x20) if draw(st.booleans()) else \
        attributes(build_control_batch(draw(st.integers(0, 2**40)), [encode_control(*leader_change(1))], epoch=1,
                                       timestamp=1), clear_bits=0x20)


any_batch = general_batches() | kraft_batches() | control_batches() | flagged_kraft_batches()
kinds = st.sampled_from(["bytes", "mmap", "bytearray", "memoryview"])


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """A batch with its bytes damaged: a header field outside the CRC, a byte inside, a cut, an insertion."""
    data = bytearray(draw(any_batch))
    how = draw(st.sampled_from(["byte", "header", "cut", "insert", "delete"]))
    if how == "byte":
        at = draw(st.integers(HEADER_SIZE, len(data) - 1)) if len(data) > HEADER_SIZE else 0
        data[at] = draw(st.integers(0, 255))
    elif how == "header":  # baseOffset, batchLength, partitionLeaderEpoch, magic, attributes, counts, deltas
        at = draw(st.sampled_from([0, 7, 8, 11, 12, 16, 21, 22, 23, 26, 27, 35, 57, 58, 60]))
        data[at] = draw(st.integers(0, 255))
    elif how == "cut":
        del data[draw(st.integers(0, len(data) - 1)):]
    elif how == "insert":
        at = draw(st.integers(HEADER_SIZE, len(data)))
        data[at:at] = draw(st.binary(min_size=1, max_size=3))
    else:
        at = draw(st.integers(HEADER_SIZE, len(data) - 1))
        del data[at:at + draw(st.integers(1, 3))]
    return bytes(data)


def area_of(b: RecordBatch) -> RecordArea:
    """The records of the uncompressed batch ``b``, as RecordBatch hands them to its decoders."""
    log_append_time = b.max_timestamp if b.timestamp_type == "LogAppendTime" else None
    return RecordArea(b.data, HEADER_SIZE, b.size_in_bytes, b.records_count, b.base_offset, b.base_timestamp,
                      log_append_time)


# ---- the tests -------------------------------------------------------------------------------------------
@DIFFERENTIAL
@given(data=any_batch, kind=kinds)
def test_valid_batches_read_the_same_on_both_cores(data, kind):
    compiled, pure = both(records_of(data, kind, "decode_records"))
    assert pure[0] == "records"
    assert compiled == pure


@DIFFERENTIAL
@given(data=any_batch, kind=kinds)
def test_kraft_rules_read_or_refuse_the_same_on_both_cores(data, kind):
    """KRaft's rules for the records of a batch (metalog.log.kraft_records) on top: the same records, or the same
    error naming the same record, on both cores."""
    compiled, pure = both(records_of(data, kind))
    assert compiled == pure


@DIFFERENTIAL
@given(data=kraft_batches(), kind=kinds)
def test_kraft_batches_pass_kraft_rules_on_both_cores(data, kind):
    compiled, pure = both(records_of(data, kind))
    assert pure[0] == "records"
    assert compiled == pure


@DIFFERENTIAL
@given(data=damaged(), kind=kinds, method=st.sampled_from(["records", "decode_records"]))
def test_damaged_batches_read_or_fail_the_same_on_both_cores(data, kind, method):
    compiled, pure = both(records_of(data, kind, method))
    assert compiled == pure


@DIFFERENTIAL
@given(data=any_batch)
def test_the_compiled_decoder_reads_every_valid_batch_itself(data):
    """It hands no valid batch of these shapes to the pure decoder (those tests would pass on the pure path alone)."""
    b = RecordBatch(data)
    if b.compression is not Compression.NONE:
        return  # decompressed first, then the same decoder: the tests above read them on both cores
    area = area_of(b)
    got = COMPILED_DECODE(area, Record)
    assert got is not None
    assert got == batch_module._decode_records(area)


@DIFFERENTIAL
@given(data=kraft_batches() | general_batches())
def test_the_compiled_decoder_reads_kraft_data_records_itself_and_hands_over_the_rest(data):
    """With KRaft's data-record form asked for, the compiled decoder reads every batch in that form itself and hands
    every other one to the pure decoder (None), which says which rule a record breaks."""
    b = RecordBatch(data)
    if b.compression is not Compression.NONE:
        return
    area = area_of(b)
    log_append_time = area.log_append_time
    got = COMPILED_DECODE(area, Record, True)
    general = batch_module._decode_records(area)
    kraft_form = all(r.key is None and r.value and not r.headers and r.offset == b.base_offset + i
                     for i, r in enumerate(general)) and (
        log_append_time is not None or all(r.timestamp == b.base_timestamp for r in general))
    if got is not None:
        assert got == general and kraft_form
    elif log_append_time is None:  # (with log-append time a record's delta is not in its timestamp: not known here)
        assert not kraft_form


def test_the_compiled_records_are_kept_out_of_the_cycle_collector():
    """A batch keeps a thousand records alive: the collector walking them cost more than reading them
    (CPython untracks exact tuples by itself, never a NamedTuple's)."""
    records = RecordBatch(build_data_batch(0, [b"v%d" % i for i in range(1000)], epoch=1, timestamp=5)).records()
    assert not any(gc.is_tracked(r) for r in records)
    headed = RecordBatch(build_batch(0, [Record(0, 0, b"k", b"v", (("h", b"x"),))])).decode_records()
    assert headed[0].headers == (("h", b"x"),) and not gc.is_tracked(headed[0])


def test_hostile_counts_allocate_nothing():
    """A record count the bytes cannot hold is refused before anything is made for it."""
    assert COMPILED_DECODE(RecordArea(b"\x00" * 100, 0, 100, 2**62, 0, 0, None), Record) is None
    assert COMPILED_DECODE(RecordArea(b"\x00" * 100, 0, 100, 15, 0, 0, None), Record) is None


def test_the_compiled_decoder_reads_a_record_area_in_its_order_and_nothing_else():
    """The compiled decoder reads a RecordArea's fields by index: a build for another field order is refused when it
    loads (the pure decoder runs), and what is not a RecordArea is refused with an error, never read."""
    loaded = batch_module.DECODE_RECORDS.loaded
    assert loaded is not None and batch_module.check_record_area(loaded) is None
    stale = ModuleType("metalog.log.compiled.stale")
    assert batch_module.check_record_area(stale) == ("metalog.log.compiled.stale was built for another RecordArea "
                                                     "(no AREA_FIELDS)")
    stale.AREA_FIELDS = ("data", "begin", "limit", "base_offset", "records_count", "base_timestamp",  # type: ignore[attr-defined]
                         "log_append_time")
    assert batch_module.check_record_area(stale) == (
        "metalog.log.compiled.stale was built for another RecordArea (data, begin, limit, base_offset, records_count, "
        "base_timestamp, log_append_time)")
    data = build_data_batch(0, [b"v"], epoch=1, timestamp=5)
    with pytest.raises(TypeError, match="decode_records takes a RecordArea, not tuple"):
        COMPILED_DECODE((data, HEADER_SIZE, len(data), 1, 0, 5), Record)
    with pytest.raises(TypeError, match="decode_records takes a RecordArea, not bytes"):
        COMPILED_DECODE(data, Record)


def test_the_log_core_is_named():
    assert cores.log_status().startswith("compiled (Cython ")


# ---- the batch scan: frame, CRC and chain checks, the same errors -------------------------------------
def batch_facts(batches: Any) -> list[tuple[Any, ...]]:
    """What a reader of the batches sees: where each is and its header, its records read lazily."""
    return [(b.position, b.start, b.source, b.base_offset, b.batch_length, b.partition_leader_epoch, b.magic, b.crc,
             b.attributes, b.last_offset_delta, b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch,
             b.base_sequence, b.records_count, bytes(b.raw())) for b in batches]


def scan_outcome(read: Callable[[list[Any]], None]) -> tuple[list[tuple[Any, ...]], Any]:
    """The batches a reader yields before it stops, and how it stops (None, or the error's type, text, file, byte)."""
    seen: list[Any] = []
    try:
        read(seen)
    except MetalogError as e:
        return batch_facts(seen), (type(e).__name__, str(e), getattr(e, "file", None), getattr(e, "position", None))
    return batch_facts(seen), None


@st.composite
def segments(draw: st.DrawFn) -> bytes:
    """Batches one after another as a segment holds them (offsets running on, epochs rising), maybe damaged."""
    out, offset, epoch = bytearray(), draw(st.integers(0, 1000)), draw(st.integers(-1, 3))
    for _ in range(draw(st.integers(1, 8))):
        most = draw(st.sampled_from([1, 4, 40]))
        vals = draw(st.lists(st.binary(min_size=1, max_size=60), min_size=1, max_size=most))
        epoch += draw(st.sampled_from([0, 0, 0, 1]))
        out += build_data_batch(offset, vals, epoch=epoch, timestamp=draw(st.integers(0, 2**41)))
        offset += len(vals)
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):  # damage anywhere: a header field, a byte, a cut
        how = draw(st.sampled_from(["byte", "cut", "insert"]))
        at = draw(st.integers(0, len(out) - 1))
        if how == "byte":
            out[at] ^= draw(st.integers(1, 255))
        elif how == "cut":
            del out[at:]
        else:
            out[at:at] = draw(st.binary(min_size=1, max_size=70))
        if not out:
            out += b"\x00"
    return bytes(out)


@DIFFERENTIAL
@given(data=segments(), validate=st.booleans(), chained=st.booleans(), mapped=st.booleans(),
       chunk=st.sampled_from([64, 300, 4096, 1 << 20]))
def test_segments_scan_the_same_on_both_cores(data, validate, chained, mapped, chunk, tmp_path_factory):
    """read_batches over a file (read in chunks or mapped, with or without the CRC and the chain checks): the same
    batches, then the same error, with the same text, file and byte."""
    from metalog.log.chain import BatchChain
    from metalog.log.reader import BatchWalk, read_batches

    path = tmp_path_factory.mktemp("seg") / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        first = int.from_bytes(data[:8], "big", signed=True) if len(data) >= 8 else 0

        def read(seen: list[Any]) -> None:
            chain = BatchChain(first, -1) if chained else None
            for b in read_batches(fd, 0, len(data), BatchWalk(str(path), validate, chain), chunk_bytes=chunk,
                                  mapped=mapped):
                seen.append(b)
            if chain is not None:
                seen.append(_Chain(chain.next_offset, chain.epoch))

        compiled = scan_outcome(read)
        with pure_log_core():
            pure = scan_outcome(read)
    finally:
        os.close(fd)
    assert compiled == pure


@DIFFERENTIAL
@given(data=segments(), validate=st.booleans())
def test_bytes_in_memory_scan_the_same_on_both_cores(data, validate):
    def read(seen: list[Any]) -> None:
        seen.extend(iter_batches(data, source="mem", validate=validate))

    compiled = scan_outcome(read)
    with pure_log_core():
        pure = scan_outcome(read)
    assert compiled == pure


class _Chain:
    """The chain after a read, compared like a batch's facts (``batch_facts`` reads these fields)."""

    def __init__(self, next_offset: int, epoch: int) -> None:
        self.position = self.start = self.source = None
        self.base_offset, self.partition_leader_epoch = next_offset, epoch
        (self.batch_length, self.magic, self.crc, self.attributes, self.last_offset_delta, self.base_timestamp,
         self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence, self.records_count) = [0] * 11

    def raw(self) -> bytes:
        return b""


@pytest.fixture(scope="module")
def small_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt]]:
    path = tmp_path_factory.mktemp("small-log")
    batches = build_log(path, records=120, seed=5, segment_bytes=3000, index_interval_bytes=600, batches_per_epoch=20)
    return path, batches


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10**6), field=st.sampled_from(sorted(DAMAGES)), flip=st.integers(1, 255))
def test_every_reader_of_a_damaged_log_answers_the_same_on_both_cores(pick, field, flip, small_log, tmp_path_factory):
    """The log's readers (batches, records, scan, scan_into, state, analysis, dump) over a log with one header field
    outside the CRC (or a byte inside it) damaged in one batch: the same answers, or the same one-line error."""
    path, batches = small_log
    at = batches[pick % len(batches)]
    work = tmp_path_factory.mktemp("damaged")
    shutil.rmtree(work)
    shutil.copytree(path, work)
    target = work / PARTITION_DIR / at.segment.name
    with open(target, "r+b") as f:
        f.seek(at.position + DAMAGES[field])
        old = f.read(1)[0]
        f.seek(at.position + DAMAGES[field])
        f.write(bytes([old ^ flip]))
    compiled = answers(work)
    with pure_log_core():
        pure = answers(work)
    assert compiled == pure


# ---- replay: the compiled read loop and dispatch publish what the pure ones publish -------------------------
def _write(root: Path, values: list[bytes], sizes: list[int], gzip: list[bool], control_every: int) -> None:
    """The values as batches of the given sizes (some gzip, control batches between)."""
    from metalog.codec import message_class
    from metalog.log import Durability, LogConfig, MetadataLog, Mode

    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        i = n = 0
        while i < len(values):
            if control_every and n % control_every == control_every - 1:
                log.append_control([(message_class("LeaderChangeMessage")(leader_id=1, voters=[]), 0)],
                                   timestamp=1_700_000_000_000 + n)
            size = sizes[n % len(sizes)]
            log.append(values[i:i + size], timestamp=1_700_000_000_000 + n, batch_size=size,
                       compression="gzip" if gzip[n % len(gzip)] else "none")
            i += size
            n += 1


def _replayed(root: Path) -> tuple[Any, ...]:
    """Every state published at a batch end (offset, timestamp, the image as JSON), and the fused replay's state at
    the end; or the error either stopped at."""
    from metalog.replay.history import MetadataHistory
    from metalog.state.jsonimage import image_to_json

    def run() -> Any:
        with MetadataHistory(root) as h:
            states = [(s.offset, s.timestamp, image_to_json(s.image)) for s in h.states()]
            end = h.state_at(use_snapshots=False)
            return states, end.offset, end.records_replayed, end.open_transaction, image_to_json(end.image)

    try:
        return ("states", run())
    except MetalogError as e:
        return ("error", type(e).__name__, str(e), getattr(e, "offset", None), getattr(e, "record", None),
                getattr(e, "file", None))


def _both_replays(root: Path) -> tuple[Any, Any]:
    compiled = _replayed(root)
    with pure_log_core():
        pure = _replayed(root)
    return compiled, pure


batch_shapes = dict(sizes=st.lists(st.sampled_from([1, 1, 1, 2, 3, 17, 70]), min_size=1, max_size=6),
                    gzip=st.lists(st.booleans() | st.just(False), min_size=1, max_size=4),
                    control_every=st.integers(0, 7))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@given(values=histories(max_size=80), **batch_shapes)
def test_random_histories_publish_the_same_states_on_both_cores(values, sizes, gzip, control_every,
                                                                tmp_path_factory):
    """Valid histories of every record type, in random batch shapes: the same state at every batch end."""
    root = tmp_path_factory.mktemp("replay")
    _write(root, values, sizes, gzip, control_every)
    compiled, pure = _both_replays(root)
    assert compiled[0] == "states"
    assert compiled == pure


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.sampled_from(RECORD_TYPES).flatmap(record_values), min_size=1, max_size=40),
       **batch_shapes)
def test_records_that_cannot_apply_fail_the_same_on_both_cores(values, sizes, gzip, control_every,
                                                               tmp_path_factory):
    """Records drawn at random (most cannot apply where they land): the same states, then the same error, naming
    the same offset and record type."""
    root = tmp_path_factory.mktemp("replay")
    _write(root, values, sizes, gzip, control_every)
    compiled, pure = _both_replays(root)
    assert compiled == pure


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), **batch_shapes)
def test_generated_clusters_with_transactions_publish_the_same_states_on_both_cores(seed, n, sizes, gzip,
                                                                                     control_every, tmp_path_factory):
    """A generated cluster's history (brokers, topics, partition changes, transactions): the same states."""
    from metalog.codec.framing import encode_metadata_record
    from metalog.generate import HistoryGenerator, HistorySettings

    gen = HistoryGenerator(seed, HistorySettings(brokers=4, topics=3, partitions=3, records=n, transactions=True))
    values = [encode_metadata_record(record, version) for _, record, version in gen.records()]
    root = tmp_path_factory.mktemp("replay")
    _write(root, values, sizes, gzip, control_every)
    compiled, pure = _both_replays(root)
    assert compiled[0] == "states"
    assert compiled == pure


def test_the_compiled_replay_runs_where_the_compiled_core_does():
    """Each loader's replay_value is the compiled one (the tests above would pass on the pure path alone)."""
    from metalog.state import MetadataLoader

    loader = MetadataLoader()
    assert type(loader.replay_value).__name__ == "ValueReplay" and loader.replay_value.c_value_sink is not None
    with pure_log_core():
        assert MetadataLoader().replay_value.__func__ is MetadataLoader.replay_value
