"""Crash injection: torn and corrupt tails are cut to the committed prefix; damage in the middle is an error."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from metalog.codec import message_class
from metalog.codec.framing import encode_metadata_record
from metalog.errors import CorruptBatchError
from metalog.log import Check, LogConfig, MetadataLog, Mode
from metalog.log.verify import verify_log

TS = 1700000000000
SEGMENT = "__cluster_metadata-0/00000000000000000000.log"


def feature_level(b: int, i: int) -> bytes:
    return encode_metadata_record(message_class("FeatureLevelRecord")(name=f"feature-{b}-{i}", feature_level=b), 0)


def make_log(path: Path, batches: int = 6, *, interval: int = 4096) -> list[tuple[int, int]]:
    """A log of small batches; returns (position, base offset) of each batch."""
    with MetadataLog.open(path, Mode.CREATE, config=LogConfig(index_interval_bytes=interval)) as log:
        for b in range(batches):
            log.append([feature_level(b, i) for i in range(3)], epoch=1 + b // 3, timestamp=TS + b)
        return [(batch.position, batch.base_offset) for batch in log.batches()]


def reopen_and_check(path: Path, prefix_batches: list[tuple[int, int]], end_offset: int) -> MetadataLog:
    log = MetadataLog.open(path, Mode.WRITE, config=LogConfig(index_interval_bytes=64))
    assert log.log_end_offset == end_offset
    assert [(b.position, b.base_offset) for b in log.batches()] == prefix_batches
    assert [r.offset for r in log.records()] == list(range(end_offset))
    return log


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """One log with an index entry on its last batch (interval 64), built once."""
    path = tmp_path_factory.mktemp("pristine")
    batches = make_log(path, interval=64)
    return path, batches


def _damage_cases(pristine, tmp_path, damage, first: int = 0) -> int:
    path, batches = pristine
    seg_size = (path / SEGMENT).stat().st_size
    last_pos, last_base = batches[-1]
    for i in range(first, seg_size - last_pos):
        work = tmp_path / f"case{i}"
        shutil.copytree(path, work)
        damage(work / SEGMENT, last_pos, i)
        log = reopen_and_check(work, batches[:-1], last_base)
        try:
            assert len(log.recovery.truncated) == 1, (i, log.recovery.lines())
            assert f"at byte {last_pos}" in log.recovery.truncated[0]
            assert (work / SEGMENT).stat().st_size == last_pos
            log.append([b"\x01\x14\x00\x00"], timestamp=TS + 99)  # the log goes on from the committed prefix
        finally:
            log.close()
        with MetadataLog.open(work) as again:
            assert not again.recovery and again.log_end_offset == last_base + 1
        assert verify_log(work).ok, verify_log(work).problems
        shutil.rmtree(work)
    return seg_size - last_pos - first


def test_truncating_the_last_batch_at_every_byte_keeps_the_committed_prefix(pristine, tmp_path):
    cases = _damage_cases(pristine, tmp_path, lambda seg, last_pos, i: os.truncate(seg, last_pos + i), first=1)
    assert cases > 60  # every length from 1 byte of the last batch to all but its last byte


def test_corrupting_the_last_batch_at_every_byte_keeps_the_committed_prefix(pristine, tmp_path):
    def flip(seg: Path, last_pos: int, i: int) -> None:
        with open(seg, "r+b") as f:
            f.seek(last_pos + i)
            b = f.read(1)
            f.seek(last_pos + i)
            f.write(bytes([b[0] ^ 0xFF]))
    assert _damage_cases(pristine, tmp_path, flip) > 60


def test_damage_in_the_middle_is_an_error_naming_file_and_position(tmp_path):
    path, work = tmp_path / "log", tmp_path / "mid"
    batches = make_log(path)  # no index entries: open validates the whole segment
    shutil.copytree(path, work)
    pos = batches[2][0]
    with open(work / SEGMENT, "r+b") as f:
        f.seek(pos + 40)
        f.write(b"\xee")
    with pytest.raises(CorruptBatchError) as err:
        MetadataLog.open(work)
    assert str(err.value).startswith(f"{work / SEGMENT}, byte {pos}: ")
    assert "CRC-32C mismatch" in str(err.value) and "repair" in str(err.value)
    assert (work / SEGMENT).stat().st_size == (path / SEGMENT).stat().st_size  # nothing was cut
    # an explicit repair truncates there and says what was lost
    with MetadataLog.open(work, Mode.WRITE, check=Check.REPAIR) as log:
        assert log.log_end_offset == batches[2][1]
        assert len(log.recovery.lost) == 1 and f"at byte {pos}" in log.recovery.lost[0]
    with MetadataLog.open(work) as log:
        assert not log.recovery and log.log_end_offset == batches[2][1]
    assert verify_log(work).ok


def test_damage_before_the_tail_fails_reads_and_verify(tmp_path):
    batches = make_log(tmp_path, batches=300, interval=512)  # an index entry well after the damage
    pos = batches[10][0]
    with open(tmp_path / SEGMENT, "r+b") as f:
        f.seek(pos + 30)
        f.write(b"\x00\x00")
    with (MetadataLog.open(tmp_path) as log,  # the tail is fine; opening is quick
          pytest.raises(CorruptBatchError, match=f"byte {pos}: batch: CRC-32C mismatch")):
        list(log.records())
    v = verify_log(tmp_path)
    assert not v.ok and any(f"byte {pos}" in p and "CRC-32C" in p for p in v.problems)


def test_a_bad_length_in_the_middle_is_not_mistaken_for_a_torn_tail(tmp_path):
    work = tmp_path / "len"
    batches = make_log(work)
    pos = batches[1][0]
    with open(work / SEGMENT, "r+b") as f:
        f.seek(pos + 8)
        f.write((10**6).to_bytes(4, "big"))  # runs past the end of the file, like a torn write would
    with pytest.raises(CorruptBatchError, match="valid batches follow"):
        MetadataLog.open(work)


CHILD = textwrap.dedent("""
    import sys
    from metalog.log import LogConfig, MetadataLog, Mode
    with MetadataLog.open(sys.argv[1], Mode.CREATE, config=LogConfig(segment_bytes=3_000_000)) as log:
        n = 0
        while True:
            values = [b"\\x01\\x14\\x00\\x00" + (n + i).to_bytes(8, "big") * 2000 for i in range(20)]
            (b,) = log.append(values, timestamp=1700000000000 + n)
            print(b.last_offset, flush=True)  # acknowledged: appended and fsynced
            n += 20
""")


@pytest.mark.parametrize("acks_before_kill", [3, 17, 40])
def test_sigkill_during_appends_loses_nothing_acknowledged(tmp_path, acks_before_kill):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, env=env)
    acked = -1
    try:
        assert child.stdout is not None
        for _ in range(acks_before_kill):
            line = child.stdout.readline()
            assert line, "the writer died early"
            acked = int(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with MetadataLog.open(tmp_path) as log:
        assert log.log_end_offset > acked
        for rec in log.records():
            assert rec.value == b"\x01\x14\x00\x00" + rec.offset.to_bytes(8, "big") * 2000
        assert log.log_end_offset % 20 == 0  # whole batches only
