"""MetadataLog: Kafka's directory layout, appends, reads by offset and timestamp, rolls, lock, retention."""

from __future__ import annotations

import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metalog.codec import message_class
from metalog.errors import LogError, LogLockedError
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.files import METADATA_TOPIC_ID, read_partition_metadata, read_properties
from metalog.log.index import OFFSET_ENTRY, TIME_ENTRY
from metalog.log.verify import verify_log
from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
from tests.waiting import DEADLINE

NOOP = bytes.fromhex("01140000")  # NoOpRecord v0, framed
TS = 1700000000000


def value(i: int, size: int = 40) -> bytes:
    """A framed FeatureLevelRecord whose name pads the value to about ``size`` bytes."""
    rec = message_class("FeatureLevelRecord")(name=f"f{i}".ljust(size, "x"), feature_level=i % 30000)
    from metalog.codec.framing import encode_metadata_record
    return encode_metadata_record(rec, 0)


def fill(log: MetadataLog, batches: int, per_batch: int = 3, *, epoch: int = 1, size: int = 40) -> None:
    n = log.log_end_offset
    for _ in range(batches):
        log.append([value(n + i, size) for i in range(per_batch)], epoch=epoch, timestamp=TS + 1000 * n)
        n += per_batch


def test_opens_kafkas_directory_read_only(jbod_dir, kafka_vectors):
    before = sorted(p.name for p in (jbod_dir / "__cluster_metadata-0").iterdir())
    with MetadataLog.open(jbod_dir) as log:
        assert log.log_start_offset == 0 and log.log_end_offset == 25
        assert log.epochs.entries == [(1, 0)]
        values = [r.value.hex() for r in log.records()]
        expected = [r["valueHex"] for b in kafka_vectors["scenarioJbod"]["batches"] for r in b["records"]]
        assert values == expected
        assert [r.offset for r in log.records(13)] == list(range(13, 25))
        assert log.offset_for_timestamp(1700000005000) == 13
        assert log.offset_for_timestamp(1700000005001) == 15
        assert log.offset_for_timestamp(1800000000000) is None
        with pytest.raises(LogError, match="read-only"):
            log.append([NOOP])
    assert sorted(p.name for p in (jbod_dir / "__cluster_metadata-0").iterdir()) == before


def test_writes_kafkas_files_for_kafkas_batches(jbod_dir, tmp_path, kafka_vectors):
    """Appending Kafka's batches to a new log gives Kafka's segment bytes and index files."""
    from metalog.log.reader import iter_batches

    segment = bytes.fromhex(kafka_vectors["scenarioJbod"]["segmentHex"])
    config = LogConfig(cluster_id="MkU3OEVBNTcwNTJENDM2Qg", node_id=3000)
    with MetadataLog.open(tmp_path, Mode.CREATE, config=config) as log:
        for batch in iter_batches(segment):
            log.append_batch(bytes(batch.raw()))
    part = tmp_path / "__cluster_metadata-0"
    assert (part / "00000000000000000000.log").read_bytes() == segment
    # 1931 bytes never exceed index.interval.bytes (4096): no offset entry; close adds the time entry.
    assert (part / "00000000000000000000.index").read_bytes() == b""
    assert (part / "00000000000000000000.timeindex").read_bytes() == TIME_ENTRY.pack(1700000008000, 24)
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n1\n1 0\n"
    assert (part / "partition.metadata").read_text() == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    assert read_partition_metadata(part / "partition.metadata") == METADATA_TOPIC_ID
    assert (part / "quorum-state").read_text() == (
        '{"leaderId":3000,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
        '"data_version":1}')
    props = read_properties(tmp_path / "meta.properties")
    assert props["version"] == "1" and props["cluster.id"] == "MkU3OEVBNTcwNTJENDM2Qg" and props["node.id"] == "3000"
    assert len(props["directory.id"]) == 22


def test_index_entries_follow_kafkas_rule(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(index_interval_bytes=4096)) as log:
        fill(log, 60, per_batch=10, size=60)  # ~900-byte batches
        positions = []
        for batch in log.batches():
            positions.append((batch.position, batch.last_offset, batch.max_timestamp))
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000"
    expected, last = [], 0
    for pos, last_offset, _ in positions:
        if pos - last > 4096:
            expected.append((last_offset, pos))
            last = pos
    index = list(OFFSET_ENTRY.iter_unpack(seg.with_suffix(".index").read_bytes()))
    assert index == expected and len(index) > 5
    times = list(TIME_ENTRY.iter_unpack(seg.with_suffix(".timeindex").read_bytes()))
    # each entry: the max timestamp at an indexed batch, plus the final one written at close
    assert times == [(ts, off) for (pos, off, ts) in positions if (off, pos) in expected] + [
        (positions[-1][2], positions[-1][1])]


def test_append_read_and_reopen(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE) as log:
        res = log.append([NOOP] * 5, epoch=3, timestamp=TS, batch_size=2)
        assert [(b.base_offset, b.last_offset, b.epoch, b.committed) for b in res] == [
            (0, 1, 3, True), (2, 3, 3, True), (4, 4, 3, True)]
        assert log.committed_offset == 5
        log.append([(message_class("NoOpRecord")(), 0)], timestamp=TS + 5)
    with MetadataLog.open(tmp_path, Mode.WRITE) as log:
        assert not log.recovery
        assert log.log_end_offset == 6 and log.latest_epoch == 3
        assert [r.offset for r in log.records()] == list(range(6))
        assert [b.base_offset for b in log.batches(3)] == [2, 4, 5]
        with pytest.raises(LogError, match="older than"):
            log.append([NOOP], epoch=2)
        log.append([NOOP], epoch=4)
        assert log.epochs.entries == [(3, 0), (4, 6)]
        assert list(log.batches(7)) == []


def test_durability_policies(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        res = log.append([NOOP] * 4, batch_size=2)
        assert [b.committed for b in res] == [False, False]
        assert log.committed_offset == 0
        log.flush()
        assert log.committed_offset == 4
    with MetadataLog.open(tmp_path, Mode.WRITE, config=LogConfig(durability=Durability.APPEND)) as log:
        res = log.append([NOOP] * 4, batch_size=2)
        assert [b.committed for b in res] == [True, True] and log.committed_offset == 8


def test_segments_roll_by_size_and_reads_cross_them(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(segment_bytes=1000)) as log:
        fill(log, 30, per_batch=2)
        assert len(log.segments) > 5
        for prev, seg in zip(log.segments, log.segments[1:], strict=False):
            assert seg.base_offset == prev.next_offset and prev.size <= 1000
        assert [r.offset for r in log.records(17)] == list(range(17, 60))
        assert log.offset_for_timestamp(TS + 1000 * 30) == 30
        assert log.offset_for_timestamp(TS + 1000 * 31) == 32  # batch 30-31 carries TS + 30 s
    names = sorted(p.name for p in (tmp_path / "__cluster_metadata-0").glob("*.log"))
    assert names[0] == "00000000000000000000.log" and all(len(n) == 24 for n in names)
    with MetadataLog.open(tmp_path) as log:
        assert not log.recovery and log.log_end_offset == 60
        assert [r.offset for r in log.records()] == list(range(60))


def test_one_writer_at_a_time(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE):
        with pytest.raises(LogLockedError, match="another writer"):
            MetadataLog.open(tmp_path, Mode.WRITE)
        with MetadataLog.open(tmp_path) as reader:  # readers do not need the lock
            assert reader.log_end_offset == 0
    with MetadataLog.open(tmp_path, Mode.WRITE) as log:  # released on close
        log.append([NOOP])


RACER = """
import io, sys
import metalog.log
from metalog.cli.main import build_parser, main
build_parser()  # every module imported before the start line, so that both start together
print("ready", flush=True)
if sys.stdin.readline() != "go\\n":  # the start line, written to both racers at once
    sys.exit("no start line")
sys.stdin = io.StringIO('{"name": "NoOpRecord", "version": 0, "data": {}}\\n' * 3)
sys.exit(main(["log", "append", "--create", sys.argv[1]]))
"""


def _ready(racer: subprocess.Popen[str]) -> None:
    """Wait until ``racer`` has imported metalog and waits for the start line (a racer that fails first says why)."""
    assert racer.stdout is not None and racer.stderr is not None
    readable, _, _ = select.select([racer.stdout], [], [], DEADLINE)
    line = racer.stdout.readline() if readable else f"nothing within {DEADLINE:.0f} s"
    assert line == "ready\n", (line, racer.kill(), racer.stderr.read())


def _go(racer: subprocess.Popen[str]) -> None:
    assert racer.stdin is not None
    with racer.stdin:
        racer.stdin.write("go\n")


def _result(racer: subprocess.Popen[str]) -> tuple[int, str, str]:
    """(exit status, stdout after the ready line, stderr) of a racer that has run."""
    assert racer.stdout is not None and racer.stderr is not None
    with racer.stdout, racer.stderr:
        return racer.wait(timeout=DEADLINE), racer.stdout.read(), racer.stderr.read()


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_two_creators_of_one_new_log_make_one_log(tmp_path):
    """Two ``log append --create`` on one new directory, started together: the directory is made under the lock,
    so one log results, the loser (if the two overlap) fails in one line, and the winner's files are whole."""
    for round_ in range(4):
        target = tmp_path / f"new-{round_}" / "metadata"
        racers = [subprocess.Popen([sys.executable, "-c", RACER, str(target)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for racer in racers:
            _ready(racer)
        for racer in racers:  # both are blocked reading the start line: it wakes them together
            _go(racer)
        results = [_result(racer) for racer in racers]
        won = [r for r in results if r[0] == 0]
        assert won, results
        for rc, out, err in results:
            if rc:
                assert out == "" and err.splitlines() == [
                    f"metalog: error: {target / '.lock'}: another writer holds the lock on this log directory; one "
                    "writer at a time (readers can open it read-only)"], results
        partition = target / "__cluster_metadata-0"
        assert {p.name for p in partition.iterdir()} >= {"partition.metadata", "quorum-state",
                                                          "leader-epoch-checkpoint", "00000000000000000000.log"}
        assert (target / "meta.properties").is_file() and not list(target.rglob("*.tmp"))
        with MetadataLog.open(target) as log:
            assert log.log_end_offset == 3 * len(won) and not log.recovery
        assert verify_log(target).ok


def test_missing_directory_is_an_error(tmp_path):
    with pytest.raises(LogError, match="no __cluster_metadata-0"):
        MetadataLog.open(tmp_path / "nothing")


def test_retention_deletes_segments_covered_by_a_snapshot(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(segment_bytes=700)) as log:
        fill(log, 20, per_batch=2)
        bases = [s.base_offset for s in log.segments]
        with SnapshotWriter(log.directory, SnapshotId(21, 1), SnapshotHeader(last_contained_log_timestamp=TS)) as w:
            w.append([NOOP])
            w.freeze()
        assert log.latest_snapshot_id() == SnapshotId(21, 1)
        deleted = log.retain()
        kept = [s.base_offset for s in log.segments]
        assert [int(p.stem) for p in deleted] == [b for b in bases if b not in kept]
        assert kept[0] <= 21 < (kept[1] if len(kept) > 1 else 10**9)  # the segment holding offset 21 stays
        assert log.log_start_offset == 21
        assert [r.offset for r in log.records()][0] == 21
        with pytest.raises(LogError, match="before the log start"):
            list(log.batches(3))
    with MetadataLog.open(tmp_path) as log:
        assert log.log_start_offset == 21
        assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\n__cluster_metadata 0 21\n"
    assert verify_log(tmp_path).ok


def test_truncate_to(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(segment_bytes=700)) as log:
        fill(log, 10, per_batch=2, epoch=1)
        fill(log, 10, per_batch=2, epoch=2)
        assert log.truncate_to(13) == 12  # the batch holding 13 (12-13) goes whole
        assert log.epochs.entries == [(1, 0)]
        assert [r.offset for r in log.records()] == list(range(12))
        log.append([NOOP], epoch=5)
    with MetadataLog.open(tmp_path) as log:
        assert log.log_end_offset == 13 and log.epochs.entries == [(1, 0), (5, 12)]
    assert verify_log(tmp_path).ok


def test_leftovers_are_cleaned_on_open(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE) as log:
        log.append([NOOP])
    part = tmp_path / "__cluster_metadata-0"
    junk = [part / "00000000000000000001-0000000001.checkpoint.part",
            part / "00000000000000000001-0000000001.checkpoint.deleted",
            part / "quorum-state.tmp"]
    for p in junk:
        p.write_bytes(b"x")
    with MetadataLog.open(tmp_path, Mode.WRITE) as log:  # the writer cleans them
        assert sorted(log.recovery.cleaned) == sorted(str(p) for p in junk)
    assert not any(p.exists() for p in junk)


def test_missing_indexes_and_epoch_checkpoint_are_rebuilt(tmp_path):
    with MetadataLog.open(tmp_path, Mode.CREATE, config=LogConfig(segment_bytes=2000)) as log:
        fill(log, 40, per_batch=3, size=60)
    part = tmp_path / "__cluster_metadata-0"
    originals = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")}
    epoch_file = (part / "leader-epoch-checkpoint").read_text()
    for name in list(originals)[:3]:
        (part / name).unlink()
    (part / "leader-epoch-checkpoint").unlink()
    some = sorted(n for n in originals if n.endswith(".index"))[1]
    (part / some).write_bytes(b"\x00" * 5)  # a torn index entry
    with MetadataLog.open(tmp_path, Mode.WRITE) as log:
        assert len(log.recovery.rebuilt) >= 3
        assert log.log_end_offset == 120
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")} == originals
    assert (part / "leader-epoch-checkpoint").read_text() == epoch_file


def test_jbod_copy_opens_writable_and_gets_indexes(jbod_dir, tmp_path):
    shutil.copytree(jbod_dir / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    with MetadataLog.open(tmp_path / "__cluster_metadata-0", Mode.WRITE) as log:
        assert any("leader-epoch-checkpoint" in r for r in log.recovery.rebuilt)
        log.append([NOOP], timestamp=1700000009000)
        assert log.log_end_offset == 26
    part = tmp_path / "__cluster_metadata-0"
    assert (part / "00000000000000000000.log").read_bytes()[:1931] == (
        jbod_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    assert Path(part / "00000000000000000000.index").exists()


def test_a_stale_epoch_checkpoint_is_rebuilt_never_treated_as_damage(tmp_path):
    """Kafka writes leader-epoch-checkpoint without waiting: after a crash it can lag the log. The batches
    win; nothing is cut, and the checkpoint is rewritten from them."""
    from metalog.codec import message_class
    from metalog.log import MetadataLog, Mode

    noop = message_class("NoOpRecord")()
    with MetadataLog.open(tmp_path, Mode.CREATE) as log:
        log.append([(noop, 0)] * 3, epoch=1)
        log.append([(noop, 0)] * 2, epoch=2)
    part = tmp_path / "__cluster_metadata-0"
    (part / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")  # epoch 2 never made it to disk
    with MetadataLog.open(tmp_path, Mode.WRITE) as log:
        assert log.log_end_offset == 5
        assert log.latest_epoch == 2
        assert any("disagreed with the log" in r for r in log.recovery.rebuilt)
        assert not log.recovery.truncated and not log.recovery.lost
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n2 3\n"
