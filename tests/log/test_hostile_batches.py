"""One reader of truth: a batch whose frame, CRC-32C and chain are sound but whose records KRaft's reader refuses
(tests/log/hostile.py crafts each kind) is damage for every verb, as it is for ``log verify``.

Kafka reads the metadata log through raft's RecordsIterator, which stops at such a batch (a control batch's records
must be control records of the types ControlRecord.of reads; a data batch's have no key, a value, no headers and
timestamp delta 0; the records must decompress, as KRaft's largest batch, KafkaRaftClient.MAX_BATCH_SIZE_BYTES,
holds them). So every verb stops at it with one line naming the file, the batch's byte and its offsets, or (``log
dump``, whose job is to go on) says so and what it left out; ``log recover --repair`` cuts there and ``log append``
refuses to append after it. Before, replay and the verbs built on it skipped a control batch unread (a data batch
with the control bit vanished, exit status 0), crashed with a BufferError where the records did not decode, and
recovery saw none of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metalog.log import MetadataLog
from metalog.log.verify import verify_log
from metalog.replay.history import MetadataHistory
from tests.log.damage import PARTITION_DIR, BatchAt, build_log
from tests.log.hostile import CRAFTED, Crafted, roll, sound_batch, write_after
from tests.log.test_damage import run

READING_VERBS = {
    "replay": ["replay", "{log}"],
    "diff": ["diff", "{log}", "--from", "0", "--to", "end"],
    "history": ["history", "{log}", "--topic", "crafted"],
    "shell": ["shell", "{log}", "ls", "/image/topics"],
    "snapshot create": ["snapshot", "create", "{log}"],
    "snapshot images": ["snapshot", "images", "{log}", "--every", "50"],
    "analyze": ["analyze", "{log}", "--engine", "python", "--out", "{out}"],
    "log recover": ["log", "recover", "{log}"],
    "quorum describe": ["quorum", "describe", "{log}"],
    "quorum history": ["quorum", "history", "{log}"],
    "why": ["why", "{log}", "--broker", "1"],
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt]]:
    path = tmp_path_factory.mktemp("pristine")
    return path, build_log(path, records=140, seed=11, segment_bytes=3500, index_interval_bytes=700,
                           batches_per_epoch=25)


def hostile(pristine: tuple[Path, list[BatchAt]], tmp_path: Path, kind: str, where: str) -> tuple[Path, Crafted]:
    """A copy of the pristine log with a crafted batch of ``kind`` at its end ("last": the tail every open checks),
    or at the end of a sealed segment, one more segment of a sound batch after it ("sealed": met by the reads that
    reach it)."""
    path, batches = pristine
    work = tmp_path / "log"
    shutil.copytree(path, work)
    last = batches[-1]
    with MetadataLog.open(path) as log:
        epoch = log.latest_epoch
    assert epoch is not None
    crafted = write_after(work / PARTITION_DIR / last.segment.name, last.last_offset + 1, epoch, CRAFTED[kind]())
    if where == "sealed":
        roll(work / PARTITION_DIR, crafted.at.last_offset + 1, epoch, sound_batch())
    return work, crafted


def files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def names(crafted: Crafted) -> str:
    """How a line names the crafted batch: its file, byte and offsets."""
    at = crafted.at
    return f"{at.segment}, byte {at.position}: batch {at.base_offset}..{at.last_offset}: "


KINDS = sorted(CRAFTED)
WHERE = ["sealed", "last"]


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("verb", READING_VERBS)
def test_every_verb_stops_at_a_batch_kraft_cannot_read(pristine, tmp_path, capsys, verb, kind, where):
    path, crafted = hostile(pristine, tmp_path, kind, where)
    before = files(path)
    rc, out, err = run([a.format(log=path, out=tmp_path / "out") for a in READING_VERBS[verb]], capsys)
    assert rc == 1, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("metalog")]  # analyze sums up on stderr
    assert len(lines) == 1 and lines[0].startswith(f"metalog: error: {names(crafted)}"), err
    after = files(path)
    images = [name for name in after.keys() - before.keys() if name.startswith("metalog-images/")]
    assert all(int(Path(name).stem) < crafted.at.base_offset for name in images)  # states before it, as published
    assert {k: v for k, v in after.items() if k not in images} == before  # no snapshot, cut or rebuilt index


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_log_verify_reports_it(pristine, tmp_path, capsys, kind, where):
    path, crafted = hostile(pristine, tmp_path, kind, where)
    rc, out, _ = run(["log", "verify", str(path)], capsys)
    assert rc == 1
    assert [line for line in out.splitlines() if line.startswith("PROBLEM: ")][0].startswith(
        f"PROBLEM: {names(crafted)}")


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_log_dump_says_so_and_goes_on(pristine, tmp_path, capsys, kind, where):
    path, crafted = hostile(pristine, tmp_path, kind, where)
    rc, out, err = run(["log", "dump", str(path)], capsys)
    assert rc == 1
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"metalog: error: {names(crafted)}")
    assert lines[0].endswith(" (its records are not shown)")
    headers = [line for line in out.splitlines() if line.startswith("baseOffset: ")]
    assert headers[-2 if where == "sealed" else -1].startswith(f"baseOffset: {crafted.at.base_offset} ")
    if where == "sealed":  # the next segment's batch is shown, records and all
        assert headers[-1].startswith(f"baseOffset: {crafted.at.last_offset + 1} ")
        assert out.rstrip("\n").splitlines()[-1].startswith(f"| offset: {crafted.at.last_offset + 1} ")


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_log_append_refuses_and_changes_nothing(pristine, tmp_path, capsys, kind, where):
    path, crafted = hostile(pristine, tmp_path, kind, where)
    before = files(path)
    rc, out, err = run(["log", "append", str(path)], capsys, '{"name": "NoOpRecord", "version": 0, "data": {}}\n')
    assert rc == 1 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(f"metalog: error: {names(crafted)}")
    assert files(path) == before


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_recover_repair_cuts_there_and_says_which_offsets(pristine, tmp_path, capsys, kind, where):
    path, crafted = hostile(pristine, tmp_path, kind, where)
    at = crafted.at
    last = at.last_offset + (1 if where == "sealed" else 0)  # the sound batch after it, in the next segment
    before = files(path)
    rc, planned, err = run(["log", "recover", "--repair", "--dry-run", str(path)], capsys)
    assert rc == 0 and err == "" and files(path) == before
    rc, out, err = run(["log", "recover", "--repair", str(path)], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"lost {at.segment} at byte {at.position}, {crafted.size} bytes (offsets "
                               f"{at.base_offset}..{last}: {last - at.base_offset + 1} offsets): "
                               f"batch {at.base_offset}..{at.last_offset}: ")
    assert lines[-1] == (f"{path}: log start offset 0, log end offset {at.base_offset}, "
                         f"{last - at.base_offset + 1} offsets cut ({at.base_offset}..{last})")
    assert planned.splitlines()[0] == "would lose " + lines[0].removeprefix("lost ")
    assert planned.splitlines()[-1] == (f"{path}: after the repair, log start offset 0, log end offset "
                                        f"{at.base_offset}, {last - at.base_offset + 1} offsets would be cut "
                                        f"({at.base_offset}..{last}); nothing was changed (--dry-run)")
    assert at.segment.stat().st_size == at.position
    assert verify_log(path).ok
    with MetadataHistory(path) as history, MetadataHistory(pristine[0]) as before_it:
        assert history.state_at().image == before_it.state_at().image


def _follow_changes(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "metalog.cli.main", "log", "follow", str(path), "--from", "0",
                           "--changes", "--poll", "0.05"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


@pytest.mark.parametrize("kind", ["a data batch with the control bit", "codec id 7"])
def test_log_follow_changes_stops_there(pristine, tmp_path, kind):
    path, crafted = hostile(pristine, tmp_path, kind, "sealed")
    done = _follow_changes(path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.splitlines()[0]]
    assert done.stderr.startswith(f"metalog: error: {names(crafted)}")

