"""The state at an offset is the one Kafka's loader published last at or before it.

Kafka: metadata/src/main/java/org/apache/kafka/image/loader/MetadataBatchLoader.java (loadBatch emits the
delta when a transaction starts inside a batch; maybeFlushBatches publishes at a batch end unless a transaction
is open) and MetadataLoader.java (handleCommit: here one commit per batch; handleLoadSnapshot).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.errors import PointError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from metalog.replay.history import MetadataHistory
from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
from metalog.state import MetadataLoader
from metalog.state.delta import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage
from metalog.state.jsonimage import image_to_json
from metalog.state.records import image_records
from metalog.state.serde import image_to_bytes
from tests.conftest import load_vectors

TS = 1_700_000_000_000
CONTROL = "control"


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def config(value: str) -> Any:
    return rec("ConfigRecord", resource_type=4, resource_name="", name="k", value=value)


BEGIN, END, ABORT = rec("BeginTransactionRecord", name="t"), rec("EndTransactionRecord"), rec("AbortTransactionRecord")
NOOP = rec("NoOpRecord")
TOPIC = Uuid.of(7, 7)
# a partition whose every change bumps its partition epoch: a record applied twice would show
SETUP = [rec("TopicRecord", name="t", topic_id=TOPIC),
         rec("PartitionRecord", partition_id=0, topic_id=TOPIC, replicas=[1], isr=[1], leader=1, leader_epoch=0,
             partition_epoch=0)]
CHANGE = rec("PartitionChangeRecord", partition_id=0, topic_id=TOPIC, isr=[1])


def write(root: Path, batches: list[list[Any] | str], segment_bytes: int = 1 << 30) -> Path:
    """Each batch exactly as given (``CONTROL``: a LeaderChange control batch), the n-th stamped TS + n s; built
    and appended whole, so nothing reshapes them (records after an abort stay in their batch)."""
    config = LogConfig(segment_bytes=segment_bytes, durability=Durability.NONE)
    with MetadataLog.open(root, Mode.CREATE, config=config) as log:
        for n, batch in enumerate(batches):
            if batch == CONTROL:
                log.append_control([(rec("LeaderChangeMessage", leader_id=1, voters=[]), 0)], epoch=1,
                                   timestamp=TS + n * 1000)
            else:
                values = [encode_metadata_record(r, 0) for r in batch]
                log.append_batch(build_data_batch(0, values, epoch=1, timestamp=TS + n * 1000))
    return root


# ---- an independent model ---------------------------------------------------------------------------------
@dataclass
class Published:
    offset: int
    image: MetadataImage
    batch_end: bool


class KafkaBatchLoaderModel:
    """Kafka's MetadataBatchLoader written out plainly, one commit per batch: whole batches, the five states as
    strings, the emission when a transaction starts inside a batch, the flush at every batch end. One line
    differs, metalog's documented choice: an abort drops the transaction's records at once (Kafka drops them at
    the flush, so records after the abort in the same batch would keep them)."""

    def __init__(self) -> None:
        self.image = EMPTY
        self.delta = MetadataDelta(EMPTY)
        self.state = "NO_TRANSACTION"
        self.last_offset = -1
        self.num_batches = 0
        self.published: list[Published] = []
        self.open_since: dict[int, int | None] = {}  # offset -> the open transaction's Begin after that offset
        self.begin: int | None = None

    def load(self, base: int, batch: list[Any] | str, last: int) -> None:
        for index, record in enumerate([] if batch == CONTROL else batch):
            offset = base + index
            self.record(record, offset)
            if self.state == "STARTED_TRANSACTION" and (index > 0 or self.num_batches > 0):
                self.emit(self.last_offset, batch_end=False)
                self.state = "STARTED_TRANSACTION"
            self.last_offset = offset
            self.open_since[offset] = self.begin
        for offset in range(base + (0 if batch == CONTROL else len(batch)), last + 1):
            self.open_since[offset] = self.begin
        self.last_offset = last
        self.num_batches += 1
        if self.state == "ABORTED_TRANSACTION":
            self.delta = MetadataDelta(self.image)
        if self.state not in ("STARTED_TRANSACTION", "CONTINUED_TRANSACTION"):
            self.emit(last, batch_end=True)

    def record(self, record: Any, offset: int) -> None:
        """The transaction state after one record, and the record replayed into the delta."""
        name = record.NAME
        if name == "BeginTransactionRecord":
            assert self.state not in ("STARTED_TRANSACTION", "CONTINUED_TRANSACTION")
            self.state, self.begin = "STARTED_TRANSACTION", offset
        elif name in ("EndTransactionRecord", "AbortTransactionRecord"):
            assert self.state in ("STARTED_TRANSACTION", "CONTINUED_TRANSACTION")
            self.begin = None
            if name == "EndTransactionRecord":
                self.state = "ENDED_TRANSACTION"
            else:
                self.state = "ABORTED_TRANSACTION"
                self.delta = MetadataDelta(self.image)  # metalog's difference
        else:
            if self.state == "STARTED_TRANSACTION":
                self.state = "CONTINUED_TRANSACTION"
            elif self.state in ("ENDED_TRANSACTION", "ABORTED_TRANSACTION"):
                self.state = "NO_TRANSACTION"
            self.delta.replay(record)

    def emit(self, offset: int, *, batch_end: bool) -> None:
        self.delta.offset = offset
        self.image = self.delta.apply()
        self.published.append(Published(offset, self.image, batch_end))
        self.delta = MetadataDelta(self.image)
        self.state = "NO_TRANSACTION"
        self.num_batches = 0

    def at(self, offset: int) -> Published | None:
        """The last state published at or before ``offset``."""
        found = [p for p in self.published if p.offset <= offset]
        return found[-1] if found else None


def model_of(batches: list[list[Any] | str]) -> tuple[KafkaBatchLoaderModel, list[tuple[int, int]]]:
    model, spans, base = KafkaBatchLoaderModel(), [], 0
    for batch in batches:
        last = base + (1 if batch == CONTROL else len(batch)) - 1
        model.load(base, batch, last)
        spans.append((base, last))
        base = last + 1
    return model, spans


# ---- random histories in random batch shapes --------------------------------------------------------------
@st.composite
def histories(draw: st.DrawFn) -> list[list[Any] | str]:
    ops = draw(st.lists(st.sampled_from(["config"] * 3 + ["change", "noop", "begin", "end", "abort"]), min_size=1,
                        max_size=45))
    records, open_ = [], False
    for i, op in enumerate(ops):
        if op == "begin" and not open_:
            records.append(BEGIN)
            open_ = True
        elif op in ("end", "abort") and open_:
            records.append(END if op == "end" else ABORT)
            open_ = False
        else:
            records.append(NOOP if op == "noop" else CHANGE if op == "change" else config(f"v{i}"))
    sizes = draw(st.lists(st.sampled_from([1, 1, 2, 3, 5, 8]), min_size=1, max_size=6))
    controls = draw(st.lists(st.booleans(), min_size=1, max_size=5))
    batches: list[list[Any] | str] = [SETUP]
    i = n = 0
    while i < len(records):
        if controls[n % len(controls)] and n % 3 == 1:
            batches.append(CONTROL)
        batches.append(records[i:i + sizes[n % len(sizes)]])
        i += sizes[n % len(sizes)]
        n += 1
    return batches


def snapshot(root: Path, point: Published) -> None:
    """A Kafka snapshot of a published state (Kafka snapshots any published image, inside a batch too)."""
    directory = root / "__cluster_metadata-0"
    with SnapshotWriter(directory, SnapshotId(point.offset + 1, 1), SnapshotHeader(last_contained_log_timestamp=TS),
                        time_ms=TS) as writer:
        writer.append(image_records(point.image))
        writer.freeze()


def same(got: MetadataImage, expected: MetadataImage) -> bool:
    return got.offset == expected.offset and image_to_json(got) == image_to_json(expected)


@settings(max_examples=60, deadline=None)
@given(batches=histories(), snapshot_picks=st.lists(st.integers(0, 1000), max_size=3),
       image_every=st.integers(0, 12), use_snapshots=st.booleans(), truncate=st.booleans())
def test_the_state_at_every_offset_is_the_last_published_one(batches: list[list[Any] | str],
                                                             snapshot_picks: list[int], image_every: int,
                                                             use_snapshots: bool, truncate: bool) -> None:
    """With snapshots (Kafka's may end inside a batch, before a Begin), state images, and the log's segments
    before the last snapshot deleted (Kafka's retention: the log then starts where the snapshot ends, perhaps
    inside a batch)."""
    model, spans = model_of(batches)
    with tempfile.TemporaryDirectory() as tmp:
        root = write(Path(tmp), batches, segment_bytes=400)
        snapshots = sorted({p % len(model.published) for p in snapshot_picks}) if model.published else []
        for pick in snapshots:
            snapshot(root, model.published[pick])
        log_start = 0
        if truncate and snapshots:
            with MetadataLog.open(root, Mode.WRITE) as log:
                log.delete_segments_before(model.published[snapshots[-1]].offset + 1)
                log_start = log.log_start_offset
            use_snapshots = True
        kept = {model.published[pick].offset for pick in snapshots}
        with MetadataHistory(root) as h:
            if image_every:
                h.write_images(image_every)
            ends = [p for p in model.published if p.batch_end and p.offset >= log_start]
            got_states = list(h.states())
            assert [(s.offset, image_to_json(s.image)) for s in got_states] == \
                [(p.offset, image_to_json(p.image)) for p in ends]  # exactly the published batch ends
            for offset in range(-1, h.end_offset + 1):
                expected = model.at(offset)
                if expected is None or (offset < log_start - 1 and offset not in kept):
                    with pytest.raises(PointError):
                        h.state_at(offset, use_snapshots=use_snapshots)
                    continue
                got = h.state_at(offset, use_snapshots=use_snapshots)
                assert same(got.image, expected.image), offset
                assert (got.requested, got.offset) == (offset, expected.offset)
                assert got.transaction_start == (model.open_since.get(offset) if offset >= 0 else None), offset
                assert got.batch is None or got.batch.base_offset <= offset <= got.batch.last_offset
                assert (got.note() is None) == (expected.offset == offset and got.transaction_start is None)
            for start, path in [(p.offset, p.path) for p in h.start_points() if p.kind == "image"]:
                assert any(last == start for _, last in spans), path  # images only at batch ends
            for n, (_, last) in enumerate(spans):  # a time is the last batch at or before it
                if last < log_start:
                    with pytest.raises(PointError, match="before the log's first batch"):
                        h.offset_at_time(TS + n * 1000)
                    continue
                assert h.offset_at_time(TS + n * 1000) == last == h.offset_at_time(TS + n * 1000 + 999)
                if model.at(last) is not None:
                    assert h.state_at_time(TS + n * 1000).requested == last


# ---- Kafka's own log --------------------------------------------------------------------------------------
def test_a_leader_elected_inside_a_batch_is_shown_when_the_batch_ends(jbod_dir: Path) -> None:
    """Kafka's KIP-858 segment: batch 15..16 makes broker 2 leader of foo-0 at offset 15. Kafka's loader
    publishes after offset 16; at 15 its state is the one published at 14, with broker 1 leading."""
    batches = {b["baseOffset"]: b["lastOffset"] for b in load_vectors()["scenarioJbod"]["batches"]}
    assert batches[15] == 16
    with MetadataHistory(jbod_dir) as h:
        at_15, at_16 = h.state_at(15), h.state_at(16)
    leader = [image_to_json(r.image)["topics"]["foo"]["partitions"]["0"]["leader"] for r in (at_15, at_16)]
    assert leader == [1, 2]
    assert (at_15.requested, at_15.offset, str(at_15.batch)) == (15, 14, "15..16")
    assert at_15.note() == "offset 15 is inside batch 15..16; the state shown is the one published at 14"
    assert at_16.offset == 16 and at_16.note() is None


# ---- crafted logs -----------------------------------------------------------------------------------------
def test_a_begin_inside_a_batch_is_a_published_point(tmp_path: Path) -> None:
    root = write(tmp_path, [[config("a"), config("b"), BEGIN, config("c"), END]])
    with MetadataHistory(root) as h:
        assert h.state_at(1).offset == 1 and h.state_at(1).note() is None  # the Begin at 2 publishes at 1
        with pytest.raises(PointError, match="inside batch 0..4, before the first state"):
            h.state_at(0)
        inside = h.state_at(3)
        assert (inside.offset, inside.transaction_start) == (1, 2)
        assert inside.note() == ("a transaction open since offset 2 is not committed at 3; the state shown is the "
                                 "one published at 1")
        with pytest.raises(PointError, match="inside batch 0..4"):
            h.save_image(inside)  # published inside a batch: no image there
        assert [s.offset for s in h.states()] == [4]


def test_a_transaction_spanning_batches_shows_the_state_before_it(tmp_path: Path) -> None:
    root = write(tmp_path, [[config("a")], [BEGIN, config("b")], CONTROL, [config("c")], [END]])
    with MetadataHistory(root) as h:
        for offset in range(1, 5):
            r = h.state_at(offset)
            assert (r.offset, r.transaction_start, image_to_json(r.image)["configs"]) == \
                (0, 1, {"BROKER/": {"k": "a"}}), offset
        assert image_to_json(h.state_at(5).image)["configs"] == {"BROKER/": {"k": "c"}}
        assert [s.offset for s in h.states()] == [0, 5]
        path = h.save_image(h.state_at(3))  # the state before the transaction, at a batch end
        assert path.name == f"{0:020d}.image"
        assert h.write_images(1) == [root / "metalog-images" / f"{5:020d}.image"]  # none inside the transaction


def test_a_transaction_open_from_the_first_offset_publishes_nothing_before_it(tmp_path: Path) -> None:
    root = write(tmp_path, [[BEGIN, config("a")], [config("b")]])
    with MetadataHistory(root) as h, pytest.raises(PointError, match="transaction open since offset 0"):
        h.state_at(2)


def test_a_control_batch_publishes_the_state_unchanged_at_its_offset(tmp_path: Path) -> None:
    root = write(tmp_path, [[config("a")], CONTROL])
    with MetadataHistory(root) as h:
        r = h.state_at(1)
        assert (r.offset, r.note(), r.timestamp) == (1, None, TS + 1000)
        assert image_to_json(r.image) == image_to_json(h.state_at(0).image)


def test_offsets_outside_the_log_are_errors(tmp_path: Path) -> None:
    root = write(tmp_path, [[config("a")]])
    with MetadataHistory(root) as h:
        with pytest.raises(PointError, match="past the end of the log"):
            h.state_at(1)
        with pytest.raises(PointError, match="offset -1 is before the log"):
            h.state_at(-1)
        with pytest.raises(PointError, match="before the log's first batch"):
            h.offset_at_time(TS - 1)


def test_an_empty_log_has_no_state(tmp_path: Path) -> None:
    MetadataLog.open(tmp_path, Mode.CREATE).close()
    with MetadataHistory(tmp_path) as h:
        with pytest.raises(PointError, match="the log holds no batches"):
            h.state_at()
        assert list(h.states()) == [] and h.write_images(10) == []


def test_an_older_state_image_inside_a_batch_is_not_used(tmp_path: Path) -> None:
    """Older metalog wrote images at any offset; one inside a batch holds a state never published."""
    root = write(tmp_path, [[config("a"), config("b")], [config("c")]])
    with MetadataHistory(root) as h:
        image = replace(MetadataLoader().replay_all([(0, config("a"))]), offset=0)
        (root / "metalog-images").mkdir()
        (root / "metalog-images" / f"{0:020d}.image").write_bytes(image_to_bytes(image))  # inside batch 0..1
        assert [p.offset for p in h.start_points() if p.kind == "image"] == [0]
        r = h.state_at(2)
        assert r.start.kind == "empty" and image_to_json(r.image)["configs"] == {"BROKER/": {"k": "c"}}


def test_a_kafka_snapshot_inside_a_batch_is_the_state_at_its_offset(tmp_path: Path) -> None:
    """Kafka may snapshot the state it published before a BeginTransactionRecord inside a batch: at that offset
    the snapshot is the answer, and the batch's records before it are not applied again."""
    batches: list[list[Any] | str] = [SETUP, [CHANGE, CHANGE, BEGIN, CHANGE, END], [CHANGE]]
    model, _ = model_of(batches)
    root = write(tmp_path, batches)
    inside = next(p for p in model.published if not p.batch_end)
    assert inside.offset == 3
    snapshot(root, inside)
    with MetadataHistory(root) as h:
        for offset in range(3, 8):
            got = h.state_at(offset)
            assert same(got.image, model.at(offset).image), offset  # type: ignore[union-attr]
        assert h.state_at(3).start.kind == "checkpoint" and h.state_at(7).start.kind == "checkpoint"
        assert h.state_at(3).records_replayed == 0
