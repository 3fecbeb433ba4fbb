"""Damage is never answered silently: every reader checks what Kafka's log layer checks, the verbs stop with
one line naming file and byte, and recovery finds damage anywhere.

Kafka's rules followed, by where they live in Kafka: offsets run on (LogSegment: a segment's base offset is
at or below its first offset and above every offset before it; LogValidator assigns offsets one after
another; LocalLog.roll starts a segment at the log end offset), epochs never decrease
(LeaderEpochFileCache.assign takes only newer epochs), a batch holds every offset it spans (KRaft's
BatchBuilder writes recordsCount = lastOffsetDelta + 1), an index lookup lands on the batch it names
(LogSegment.translateOffset: OffsetIndex.lookup, then FileRecords.searchForOffsetWithSize from there), and
recovery cuts at the first invalid batch and drops the segments after it (LogSegment.recover,
LogLoader.recoverLog).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crc32c
import pytest

from metalog.cli.main import main
from metalog.errors import CorruptBatchError
from metalog.log import MetadataLog
from metalog.log.header import ATTRIBUTES_OFFSET, CRC_OFFSET
from metalog.log.index import OFFSET_ENTRY, TIME_ENTRY
from metalog.log.verify import verify_log
from metalog.replay.history import MetadataHistory
from tests.cli.running import run
from tests.log.damage import DAMAGES, PARTITION_DIR, BatchAt, build_log, damage

# ---- the log and its readers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt]]:
    path = tmp_path_factory.mktemp("pristine")
    return path, build_log(path)


@pytest.fixture
def copy(pristine: tuple[Path, list[BatchAt]], tmp_path: Path) -> tuple[Path, list[BatchAt]]:
    """A fresh copy of the pristine log, and its batches (with paths into the copy)."""
    path, batches = pristine
    work = tmp_path / "log"
    shutil.copytree(path, work)
    return work, [BatchAt(work / PARTITION_DIR / b.segment.name, b.position, b.base_offset, b.last_offset,
                          b.is_control) for b in batches]


def _scan_into(log: MetadataLog, first: int = 0) -> list[tuple[int, bytes | None]]:
    got: list[tuple[int, bytes | None]] = []
    for _ in log.scan_into(first, log.log_end_offset - 1, lambda v, o: got.append((o, v))):
        pass
    return got


READERS: dict[str, Callable[[MetadataLog], Any]] = {
    "batches": lambda log: [(b.base_offset, b.last_offset, b.partition_leader_epoch, b.crc) for b in log.batches()],
    "records": lambda log: [(r.offset, r.value) for r in log.records()],
    "scan": lambda log: list(log.scan()),
    "scan_into": _scan_into,
}


def indexed(batches: list[BatchAt]) -> list[int]:
    """The numbers of the batches an offset index entry names, in sealed segments."""
    active = batches[-1].segment
    found = []
    for seg in sorted({b.segment for b in batches} - {active}):
        raw = seg.with_suffix(".index").read_bytes()
        positions = {p for _, p in OFFSET_ENTRY.iter_unpack(raw)}
        found += [i for i, b in enumerate(batches) if b.segment == seg and b.position in positions]
    return found


def sealed_unindexed(batches: list[BatchAt]) -> int:
    """A data batch in a sealed segment, in the middle of it, that no index entry names."""
    active, named = batches[-1].segment, set(indexed(batches))
    candidates = [i for i, b in enumerate(batches) if b.segment != active and i not in named and not b.is_control
                  and b.position > 0]
    return candidates[len(candidates) // 3]


def first_of_segment(batches: list[BatchAt]) -> int:
    return next(i for i, b in enumerate(batches) if b.position == 0 and i > 0)


# ---- every reader checks that batches follow each other -------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("which", ["between index entries", "at an index entry", "first of a segment"])
def test_a_base_offset_that_does_not_follow_is_an_error_in_every_reader(copy, reader, which):
    path, batches = copy
    i = {"between index entries": sealed_unindexed, "at an index entry": lambda b: indexed(b)[1],
         "first of a segment": first_of_segment}[which](batches)
    damage(batches[i], DAMAGES["baseOffset"])
    with MetadataLog.open(path) as log, pytest.raises(CorruptBatchError) as e:
        READERS[reader](log)
    assert str(e.value).startswith(f"{batches[i].segment}, byte {batches[i].position}: ")
    assert f"expected {batches[i].base_offset})" in str(e.value)


@pytest.mark.parametrize("reader", READERS)
def test_an_epoch_lower_than_the_batch_before_is_an_error_in_every_reader(copy, reader):
    path, batches = copy
    i = sealed_unindexed(batches)
    damage(batches[i], DAMAGES["partitionLeaderEpoch"])  # 0x000000nn -> 0xFF0000nn: negative
    with MetadataLog.open(path) as log, pytest.raises(CorruptBatchError) as e:
        READERS[reader](log)
    assert str(e.value).startswith(f"{batches[i].segment}, byte {batches[i].position}: ")  # the batch's start
    assert "is lower than the previous batch's" in str(e.value)


@pytest.mark.parametrize("reader", READERS)
def test_an_epoch_raised_in_the_middle_is_found_at_the_next_batch(copy, reader):
    path, batches = copy
    i = sealed_unindexed(batches)
    damage(batches[i], DAMAGES["partitionLeaderEpoch"] + 1)  # 0x000000nn -> 0x00FF00nn: larger
    with MetadataLog.open(path) as log, pytest.raises(CorruptBatchError) as e:
        READERS[reader](log)
    assert str(e.value).startswith(f"{batches[i + 1].segment}, byte {batches[i + 1].position}: ")


@pytest.mark.parametrize("reader", READERS)
def test_a_batch_holds_every_offset_it_spans(copy, reader):
    """recordsCount is inside the CRC: a batch written with a count that does not span its offsets."""
    path, batches = copy
    i = sealed_unindexed(batches)
    at = batches[i]
    with open(at.segment, "r+b") as f:
        f.seek(at.position + 8)
        length = int.from_bytes(f.read(4), "big")
        f.seek(at.position)
        data = bytearray(f.read(12 + length))
        data[57:61] = (int.from_bytes(data[57:61], "big") + 1).to_bytes(4, "big")
        data[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc32c.crc32c(bytes(data[ATTRIBUTES_OFFSET:])).to_bytes(4, "big")
        f.seek(at.position)
        f.write(data)
    with MetadataLog.open(path) as log, pytest.raises(CorruptBatchError) as e:
        READERS[reader](log)
    assert str(e.value).startswith(f"{at.segment}, byte {at.position}: batch: recordsCount")


@pytest.mark.parametrize("reader", READERS)
def test_a_missing_segment_is_a_gap_every_reader_reports(copy, reader):
    path, batches = copy
    segments = sorted({b.segment for b in batches})
    for suffix in (".log", ".index", ".timeindex"):
        segments[1].with_suffix(suffix).unlink()
    with MetadataLog.open(path) as log, pytest.raises(CorruptBatchError) as e:
        READERS[reader](log)
    first_of_next = next(b for b in batches if b.segment == segments[2])
    end_of_first = max(b.last_offset for b in batches if b.segment == segments[0])
    assert str(e.value) == (f"{segments[2]}, byte 0: the segment's name says it starts at offset "
                            f"{first_of_next.base_offset}, but the batches before it end at offset {end_of_first}")
    assert verify_log(path).problems[0] == str(e.value)


def test_reads_that_start_after_the_damage_do_not_meet_it(copy):
    path, batches = copy
    i = sealed_unindexed(batches)
    damage(batches[i], DAMAGES["baseOffset"])
    later = batches[-1].base_offset
    with MetadataLog.open(path) as log:
        assert [r.offset for r in log.records(later)] == [later]
        assert [s[0] for s in log.scan(later)] == [later]
        with pytest.raises(CorruptBatchError):
            list(log.records(batches[i].base_offset))


# ---- the indexes a read uses agree with the batches ------------------------------------------------------------


def _rewrite_entry(index: Path, n: int, *, offset_delta: int = 0, position_delta: int = 0) -> tuple[int, int]:
    raw = bytearray(index.read_bytes())
    rel, pos = OFFSET_ENTRY.unpack_from(raw, n * 8)
    OFFSET_ENTRY.pack_into(raw, n * 8, rel + offset_delta, pos + position_delta)
    index.write_bytes(bytes(raw))
    return rel, pos


@pytest.mark.parametrize("change", ["position", "offset"])
def test_an_index_entry_that_does_not_name_its_batch_is_an_error_not_a_skip(copy, change, capsys):
    """An entry pointing into the middle of a batch, or naming another offset, stops the read that uses it."""
    path, batches = copy
    seg = batches[0].segment
    index = seg.with_suffix(".index")
    rel, pos = _rewrite_entry(index, 1, **{"position_delta" if change == "position" else "offset_delta": 3})
    target = batches[0].base_offset + rel + 3  # looked up through entry 1 (entry 2 names a later offset)
    with MetadataLog.open(path) as log:
        with pytest.raises(CorruptBatchError) as e:
            list(log.records(target))
        assert list(log.records(0))[-1].offset == batches[-1].last_offset  # from the segment's start: no entry used
    assert f"offset index {index.name} entry 1" in str(e.value)
    assert str(e.value).startswith(f"{seg}, byte {pos + (3 if change == 'position' else 0)}")
    v = verify_log(path)
    assert not v.ok and v.problems[0].startswith(f"{index}: entry 1 ")
    rc = main(["log", "recover", str(path)])
    assert rc == 0 and capsys.readouterr().out.startswith(f"rebuilt indexes of {seg.name} ({index}: entry 1 (")
    assert verify_log(path).ok
    with MetadataLog.open(path) as log:
        assert [r.offset for r in log.records(target)][0] == target


def test_a_time_index_entry_that_disagrees_is_an_error(copy):
    path, batches = copy
    seg = batches[0].segment
    timeindex = seg.with_suffix(".timeindex")
    raw = bytearray(timeindex.read_bytes())
    ts, rel = TIME_ENTRY.unpack_from(raw, 12)
    TIME_ENTRY.pack_into(raw, 12, ts, rel + 1)  # the entry's offset is no batch's last offset
    timeindex.write_bytes(bytes(raw))
    with MetadataLog.open(path) as log, pytest.raises(CorruptBatchError, match="time index"):
        log.offset_for_timestamp(ts + 1)
    assert verify_log(path).problems == [f"{timeindex}: entry ({ts}, {batches[0].base_offset + rel + 1}) is not the "
                                         "largest timestamp up to a batch's last offset"]
    assert main(["log", "recover", str(path)]) == 0 and verify_log(path).ok


# ---- the reported case: every verb stops with one line ---------------------------------------------------------


VERBS = {
    "replay": ["replay", "{log}"],
    "diff": ["diff", "{log}", "--from", "0", "--to", "end"],
    "analyze": ["analyze", "{log}", "--engine", "python", "--out", "{out}"],
    "snapshot create": ["snapshot", "create", "{log}", "--timestamp", "1700000000000"],
    "snapshot images": ["snapshot", "images", "{log}", "--every", "100"],
    "log dump": ["log", "dump", "{log}"],
}


def argv(verb: str, log: Path, tmp_path: Path) -> list[str]:
    return [a.format(log=log, out=tmp_path / "out") for a in VERBS[verb]]


@pytest.mark.parametrize("verb", VERBS)
def test_a_flipped_base_offset_stops_every_verb_with_one_line(copy, tmp_path, capsys, verb):
    path, batches = copy
    i = sealed_unindexed(batches)
    damage(batches[i], DAMAGES["baseOffset"])
    rc, _, err = run(argv(verb, path, tmp_path), capsys)
    assert rc == 1
    flipped = int.from_bytes((batches[i].base_offset ^ (0xFF << 56)).to_bytes(8, "big"), "big", signed=True)
    assert err.splitlines() == [f"metalog: error: {batches[i].segment}, byte {batches[i].position}: batch: baseOffset "
                                f"{flipped} does not follow the previous batch (expected {batches[i].base_offset})"]
    assert not list((path / PARTITION_DIR).glob("*.checkpoint")), "no snapshot of a state Kafka never published"


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_reports_a_dropped_torn_tail_in_one_line(copy, tmp_path, capsys, verb):
    path, batches = copy
    last = batches[-1]
    size = last.segment.stat().st_size
    with open(last.segment, "r+b") as f:
        f.truncate(size - 10)
    rc, _, err = run(argv(verb, path, tmp_path), capsys)
    assert rc == (1 if verb == "log dump" else 0), err  # dump says the file ends in invalid bytes, as Kafka's does
    said = [line for line in err.splitlines() if line.startswith("metalog")]  # analyze and images sum up on stderr
    assert len(said) == 1 and said[0].startswith("metalog: notice: "), err
    assert f"{last.segment}" in said[0] and f"byte {last.position}" in said[0] and "truncated" in said[0]


# every verb that reads a log: each names the damage where it finds it, and all of them name the same byte
READING_VERBS = {
    **VERBS,
    "log verify": ["log", "verify", "{log}"],
    "log recover": ["log", "recover", "{log}"],
    "log recover --repair --dry-run": ["log", "recover", "--repair", "--dry-run", "{log}"],
    "log follow": ["log", "follow", "{log}", "--from", "0"],
    "shell": ["shell", "{log}", "-c", "ls"],
    "why": ["why", "{log}", "--broker", "1"],
    "history": ["history", "{log}", "--features"],
    "quorum describe": ["quorum", "describe", "{log}"],
    "quorum history": ["quorum", "history", "{log}"],
}


@pytest.fixture(params=["compiled", "pure"])
def log_core(request: pytest.FixtureRequest) -> Any:
    """Each reading verb on the compiled log core and on its pure twins, in this process."""
    from contextlib import nullcontext

    from metalog.bench import cores

    if request.param == "compiled" and not cores.compiled_log_core():
        pytest.skip(f"log core: {cores.log_status()}")
    with cores.pure_log_core() if request.param == "pure" else nullcontext():
        yield request.param


@pytest.mark.parametrize("field", ["crc-covered", "magic", "partitionLeaderEpoch"])
@pytest.mark.parametrize("verb", READING_VERBS)
def test_every_reading_verb_names_the_damaged_batch_at_its_start(copy, tmp_path, capsys, log_core, verb, field):
    """The same damage is named at the same file and byte by every verb, on both cores: the batch's start, which
    ``log verify`` names and Kafka's log recovery ("at byte offset") and DumpLogSegments ("position:") give a batch,
    whichever of its fields is wrong (a byte inside the CRC, the magic, a lower epoch)."""
    path, batches = copy
    at = batches[sealed_unindexed(batches)]
    damage(at, DAMAGES[field])
    args = [a.format(log=path, out=tmp_path / "out") for a in READING_VERBS[verb]]
    _, out, err = run(args, capsys)
    named = re.findall(rf"{re.escape(str(at.segment))}(?:, | at )byte (\d+)", out + err)
    assert named and {int(n) for n in named} == {at.position}, out[-2000:] + err


def test_log_append_after_a_torn_tail_appends_and_reports_the_cut(copy, capsys):
    """Kafka's recovery cuts a torn tail and the log goes on from there; the cut is reported."""
    path, batches = copy
    last = batches[-1]
    with open(last.segment, "r+b") as f:
        f.truncate(last.segment.stat().st_size - 10)
    rc, out, err = run(["log", "append", str(path)], capsys, '{"name": "NoOpRecord", "version": 0, "data": {}}\n')
    assert rc == 0 and out.startswith(f'{{"baseOffset": {last.base_offset}, ')
    assert err.splitlines() == [f"metalog: notice: truncated {last.segment} at byte {last.position}, 62 bytes "
                                f"(offsets from {last.base_offset} on): batch: 72 bytes announced, only 62 remain "
                                "(truncated)"]
    assert verify_log(path).ok


# ---- log append refuses a log with damage in its middle --------------------------------------------------------


@pytest.mark.parametrize("where", ["sealed segment", "active segment"])
def test_log_append_refuses_a_log_with_damage_in_its_middle(copy, capsys, where):
    path, batches = copy
    active = batches[-1].segment
    i = sealed_unindexed(batches) if where == "sealed segment" else \
        next(i for i, b in enumerate(batches) if b.segment == active and b.position > 0)
    damage(batches[i], DAMAGES["crc-covered"])
    before = {p.name: p.read_bytes() for p in (path / PARTITION_DIR).iterdir()}
    rc, out, err = run(["log", "append", str(path)], capsys, '{"name": "NoOpRecord", "version": 0, "data": {}}\n')
    assert rc == 1 and out == ""
    why = "it is not in the last segment" if where == "sealed segment" else "valid batches follow"
    assert err.splitlines() == [f"metalog: error: {batches[i].segment}, byte {batches[i].position}: "
                                f"{_crc_reason(batches[i])}; {why}, so this is damage in the middle of the log (never "
                                "skipped; 'metalog log recover --repair' truncates here, losing the rest)"]
    assert {p.name: p.read_bytes() for p in (path / PARTITION_DIR).iterdir()} == before  # nothing was written


def _crc_reason(at: BatchAt) -> str:
    with open(at.segment, "rb") as f:
        f.seek(at.position)
        head = f.read(12)
        data = head + f.read(int.from_bytes(head[8:12], "big"))
    stored = int.from_bytes(data[CRC_OFFSET:ATTRIBUTES_OFFSET], "big")
    return f"batch: CRC-32C mismatch: stored {stored}, computed {crc32c.crc32c(data[ATTRIBUTES_OFFSET:])}"


# ---- log recover finds damage anywhere ---------------------------------------------------------------------------


def test_recover_repair_truncates_at_a_crc_error_early_in_the_active_segment(pristine, copy, capsys):
    """The active segment has index entries after the damage: recovery does not trust them over the bytes."""
    path, batches = copy
    active = batches[-1].segment
    i = next(i for i, b in enumerate(batches) if b.segment == active and b.position > 0)
    assert any(p > batches[i].position for _, p in OFFSET_ENTRY.iter_unpack(active.with_suffix(".index").read_bytes()))
    damage(batches[i], DAMAGES["crc-covered"])
    reason = _crc_reason(batches[i])
    with MetadataLog.open(path) as log:  # the tail is sound: a plain open is quick and says nothing
        assert not log.recovery
    rc, out, err = run(["log", "recover", str(path)], capsys)
    assert rc == 1 and out == "" and err.startswith(f"metalog: error: {active}, byte {batches[i].position}: "
                                                    f"{reason}; valid batches follow")
    size = active.stat().st_size
    rc, out, err = run(["log", "recover", "--repair", str(path)], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    first, last = batches[i].base_offset, batches[-1].last_offset
    assert lines[0] == (f"lost {active} at byte {batches[i].position}, {size - batches[i].position} bytes (offsets "
                        f"{first}..{last}: {last - first + 1} offsets): {reason}")
    assert lines[-1] == (f"{path}: log start offset 0, log end offset {first}, {last - first + 1} offsets cut "
                         f"({first}..{last})")
    assert active.stat().st_size == batches[i].position
    assert verify_log(path).ok
    assert state(path) == state(pristine[0], batches[i].base_offset - 1)


def test_recover_repair_drops_the_segments_after_the_damage_and_says_so(pristine, copy, capsys):
    path, batches = copy
    i = sealed_unindexed(batches)
    damage(batches[i], DAMAGES["baseOffset"])
    segments = sorted({b.segment for b in batches})
    later = [s for s in segments if s.name > batches[i].segment.name]
    sizes = {s: s.stat().st_size for s in segments}
    rc, out, _ = run(["log", "recover", "--repair", str(path)], capsys)
    assert rc == 0
    lines = out.splitlines()
    first, last = batches[i].base_offset, batches[-1].last_offset
    assert lines[0].startswith(f"lost {batches[i].segment} at byte {batches[i].position}, "
                               f"{sizes[batches[i].segment] - batches[i].position} bytes (offsets "
                               f"{first}..{last}: {last - first + 1} offsets): batch: baseOffset ")
    assert lines[1:1 + len(later)] == [f"lost {s} (whole segment, {sizes[s]} bytes)" for s in later]
    assert not any(s.exists() or s.with_suffix(".index").exists() for s in later)
    assert verify_log(path).ok
    assert state(path) == state(pristine[0], batches[i].base_offset - 1)
    with MetadataLog.open(path) as log:
        assert log.epochs.entries == [e for e in _epochs(pristine[0]) if e[1] < batches[i].base_offset]


def test_recover_repair_drops_a_segment_whose_name_leaves_a_gap(copy, capsys):
    path, batches = copy
    segments = sorted({b.segment for b in batches})
    for suffix in (".log", ".index", ".timeindex"):
        segments[1].with_suffix(suffix).unlink()
    end = max(b.last_offset for b in batches if b.segment == segments[0]) + 1
    rc, _, err = run(["log", "recover", str(path)], capsys)
    assert rc == 1 and f"{segments[2]}, byte 0: the segment's name says it starts at offset" in err
    rc, out, _ = run(["log", "recover", "--repair", str(path)], capsys)
    first, last = next(b.base_offset for b in batches if b.segment == segments[2]), batches[-1].last_offset
    assert rc == 0 and out.splitlines()[-1] == (f"{path}: log start offset 0, log end offset {end}, "
                                                f"{last - first + 1} offsets cut ({first}..{last})")
    assert verify_log(path).ok


def test_repair_leaves_the_snapshots_alone(pristine, copy, capsys):
    from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
    from metalog.state.records import image_records

    path, batches = copy
    with SnapshotWriter(path / PARTITION_DIR, SnapshotId(batches[-1].last_offset + 1, 8),
                        SnapshotHeader(last_contained_log_timestamp=0), time_ms=0) as w:
        w.append(image_records(state(path)))
        snapshot = w.freeze()
    before = snapshot.read_bytes()
    damage(batches[sealed_unindexed(batches)], DAMAGES["magic"])
    assert run(["log", "recover", "--repair", str(path)], capsys)[0] == 0
    assert snapshot.read_bytes() == before


def state(path: Path, offset: int | None = None) -> Any:
    """The state at ``offset`` (default: the end), replayed from the log alone."""
    with MetadataHistory(path) as history:
        return history.state_at(offset, use_snapshots=False).image


def _epochs(path: Path) -> list[tuple[int, int]]:
    with MetadataLog.open(path) as log:
        return list(log.epochs.entries)


def test_with_an_empty_active_segment_open_checks_the_tail_of_the_one_before(copy):
    """Kafka rolls a segment at the log end offset; until its first batch the log's last batch is in the one
    before, and that is what open checks (its end must be the new segment's name)."""
    path, batches = copy
    last = batches[-1]
    empty = path / PARTITION_DIR / f"{last.last_offset + 1:020d}.log"
    for suffix in (".log", ".index", ".timeindex"):
        empty.with_suffix(suffix).touch()
    with MetadataLog.open(path) as log:
        assert log.log_end_offset == last.last_offset + 1 and not log.recovery
    damage(last, DAMAGES["partitionLeaderEpoch"] + 1)  # raised: only leader-epoch-checkpoint can tell
    with pytest.raises(CorruptBatchError, match="disagrees with leader-epoch-checkpoint") as e:
        MetadataLog.open(path)
    assert str(e.value).startswith(f"{last.segment}, byte {last.position}: ")
    assert "; it is not in the last segment, so this is damage in the middle of the log" in str(e.value)
    damage(last, DAMAGES["partitionLeaderEpoch"] + 1)  # undone
    empty.rename(empty.with_name(f"{last.last_offset + 2:020d}.log"))  # a gap of one offset
    with pytest.raises(CorruptBatchError, match="the segment's name says it starts at offset") as e:
        MetadataLog.open(path)
    assert "it is a gap between segments, so this is damage" in str(e.value)
