"""Lost data is named: offsets that the log's own files name (the active segment's indexes, leader-epoch-checkpoint,
the snapshots, log-start-offset-checkpoint) but its batches no longer hold are a problem for ``log verify``, a notice
for every reading verb, an error for ``log recover`` and ``log append`` (nothing is appended after them), and ``log
recover --repair`` says what it found before it rebuilds anything (metalog.log.lost).

Before, with the last batches of the active segment cut at a batch boundary, or the active segment emptied, ``log
verify`` said "intact" (a note that the indexes were rebuilt in memory), and ``log recover`` rebuilt the indexes
and so removed the evidence.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metalog.log import MetadataLog
from metalog.log.verify import verify_log
from metalog.replay.history import MetadataHistory
from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotWriter
from metalog.state.records import image_records
from tests.log.damage import PARTITION_DIR, BatchAt, build_log
from tests.log.test_damage import run
from tests.log.test_hostile_batches import files


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BatchAt]]:
    path = tmp_path_factory.mktemp("pristine")
    return path, build_log(path, records=140, seed=11, segment_bytes=3500, index_interval_bytes=700,
                           batches_per_epoch=25)


def copy_of(pristine: tuple[Path, list[BatchAt]], tmp_path: Path) -> Path:
    work = tmp_path / "log"
    shutil.copytree(pristine[0], work)
    return work


def cut_tail(path: Path, batches: list[BatchAt], keep: int) -> BatchAt:
    """The active segment cut at a batch boundary: its batches from the ``keep``-th on are gone (its indexes, written
    as they were appended, still name them). Returns the first batch lost."""
    active = [b for b in batches if b.segment == batches[-1].segment]
    first = active[keep]
    with open(path / PARTITION_DIR / first.segment.name, "r+b") as f:
        f.truncate(first.position)
    return first


CASES = {
    "the last batches of the active segment cut": lambda path, batches: cut_tail(path, batches, 3),
    "the active segment emptied": lambda path, batches: cut_tail(path, batches, 0),
}


@pytest.mark.parametrize("case", CASES)
def test_log_verify_names_the_lost_offsets(pristine, tmp_path, capsys, case):
    path = copy_of(pristine, tmp_path)
    first = CASES[case](path, pristine[1])
    rc, out, _ = run(["log", "verify", str(path)], capsys)
    assert rc == 1
    problems = [line for line in out.splitlines() if line.startswith("PROBLEM: ")]
    last = pristine[1][-1].last_offset
    assert problems == [problems[0]] and problems[0].startswith(
        f"PROBLEM: lost offsets {first.base_offset}..{last}, which the log's own files name, are not in the log (it "
        f"ends at offset {first.base_offset - 1}): {first.segment.with_suffix('.index').name} names offset ")


READING_VERBS = {
    "replay": ["replay", "{log}"],
    "diff": ["diff", "{log}", "--from", "0", "--to", "end"],
    "shell": ["shell", "{log}", "ls", "/image/topics"],
    "history": ["history", "{log}", "--controller"],
    "log dump": ["log", "dump", "--no-records", "{log}"],
}


@pytest.mark.parametrize("verb", READING_VERBS)
@pytest.mark.parametrize("case", CASES)
def test_every_reading_verb_says_so_in_one_line_and_answers_with_what_is_left(pristine, tmp_path, capsys, case,
                                                                             verb):
    path = copy_of(pristine, tmp_path)
    first = CASES[case](path, pristine[1])
    before = files(path)
    rc, _, err = run([a.format(log=path) for a in READING_VERBS[verb]], capsys)
    assert rc == 0
    assert err.splitlines() == [err.splitlines()[0]]
    assert err.startswith(f"metalog: notice: lost offsets {first.base_offset}..{pristine[1][-1].last_offset}, ")
    assert files(path) == before


@pytest.mark.parametrize("case", CASES)
def test_recover_refuses_to_rebuild_them_away_and_append_refuses_to_reuse_them(pristine, tmp_path, capsys, case):
    path = copy_of(pristine, tmp_path)
    first = CASES[case](path, pristine[1])
    before = files(path)
    for argv, stdin in ((["log", "recover", str(path)], ""),
                        (["log", "append", str(path)], '{"name": "NoOpRecord", "version": 0, "data": {}}\n')):
        rc, out, err = run(argv, capsys, stdin)
        assert rc == 1 and out == ""
        assert err.splitlines() == [err.splitlines()[0]]
        assert err.startswith(f"metalog: error: {path / PARTITION_DIR}: offsets {first.base_offset}..")
        assert "'metalog log recover --repair' rebuilds the indexes and checkpoints" in err
        assert files(path) == before


@pytest.mark.parametrize("case", CASES)
def test_recover_repair_says_what_it_found_before_what_it_rebuilt(pristine, tmp_path, capsys, case):
    path = copy_of(pristine, tmp_path)
    first = CASES[case](path, pristine[1])
    rc, out, err = run(["log", "recover", "--repair", str(path)], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"lost offsets {first.base_offset}..{pristine[1][-1].last_offset}, ")
    assert any(line.startswith("rebuilt indexes of ") for line in lines[1:])
    assert lines[-1] == f"{path}: log start offset 0, log end offset {first.base_offset}"
    assert verify_log(path).ok
    rc, out, _ = run(["log", "append", str(path)], capsys, '{"name": "NoOpRecord", "version": 0, "data": {}}\n')
    assert rc == 0 and out.startswith(f'{{"baseOffset": {first.base_offset}, ')


def test_a_snapshot_past_the_end_names_what_it_holds(pristine, tmp_path, capsys):
    """Kafka would restart the log at the snapshot (KafkaMetadataLog.truncateToLatestSnapshot); this log does not
    hold the offsets before the snapshot's end. The snapshot is left as it is, even by a repair."""
    path = copy_of(pristine, tmp_path)
    batches = pristine[1]
    with MetadataHistory(path) as history:
        image = history.state_at().image
    end = batches[-1].last_offset + 1
    header = SnapshotHeader(last_contained_log_timestamp=0)
    with SnapshotWriter(path / PARTITION_DIR, SnapshotId(end + 5, 9), header) as w:
        w.append(image_records(image))
        snapshot = w.freeze()
    problems = verify_log(path).problems
    assert problems == [f"lost offsets {end}..{end + 4}, which the log's own files name, are not in the log (it ends "
                        f"at offset {end - 1}): snapshot {snapshot.name} holds the state through offset {end + 4}"]
    rc, out, _ = run(["log", "recover", "--repair", str(path)], capsys)
    assert rc == 0 and out.startswith(f"lost offsets {end}..{end + 4}, ") and snapshot.exists()


def test_leader_epoch_checkpoint_and_log_start_past_the_end_are_named(pristine, tmp_path):
    path = copy_of(pristine, tmp_path)
    end = pristine[1][-1].last_offset + 1
    part = path / PARTITION_DIR
    epochs = (part / "leader-epoch-checkpoint").read_text().splitlines()
    entries = [*epochs[2:], f"99 {end + 7}"]
    (part / "leader-epoch-checkpoint").write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")
    (path / "log-start-offset-checkpoint").write_text(f"0\n1\n__cluster_metadata 0 {end + 3}\n")
    with MetadataLog.open(path) as log:
        assert log.recovery.missing == [
            f"offsets {end}..{end + 7}, which the log's own files name, are not in the log (it ends at offset "
            f"{end - 1}): {part / 'leader-epoch-checkpoint'} has epoch 99 start at offset {end + 7}; "
            f"log-start-offset-checkpoint says the log starts at {end + 3}"]


def test_an_epoch_starting_at_the_end_is_an_interrupted_append_not_a_loss(pristine, tmp_path):
    """leader-epoch-checkpoint is written before the epoch's first batch, by Kafka and metalog alike."""
    path = copy_of(pristine, tmp_path)
    end = pristine[1][-1].last_offset + 1
    part = path / PARTITION_DIR
    epochs = (part / "leader-epoch-checkpoint").read_text().splitlines()
    entries = [*epochs[2:], f"99 {end}"]
    (part / "leader-epoch-checkpoint").write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")
    with MetadataLog.open(path) as log:
        assert not log.recovery.missing
    assert verify_log(path).ok
