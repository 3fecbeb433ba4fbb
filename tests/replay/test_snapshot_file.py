"""A single ``.checkpoint`` file opened as the log it is (issue #26 item 1): its state is the one Kafka's loader
publishes from it, at its end offset - 1; nothing else beside it is read; damage is an error naming file and byte."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.cli.main import main
from metalog.errors import LogError, PointError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.log import MetadataLog, Mode
from metalog.replay.history import MetadataHistory
from metalog.replay.points import parse_point
from metalog.snapshots import SnapshotReader
from metalog.state.records import image_digest

SMALL = HistorySettings(brokers=4, topics=5, partitions=3, records=600)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_history(tmp_path_factory.mktemp("gen") / "log", 11, SMALL, snapshot_every=200).path


def _alone(snapshot: Path, where: Path) -> Path:
    """The snapshot copied where nothing else of its log is."""
    where.mkdir(exist_ok=True)
    return Path(shutil.copy(snapshot, where / snapshot.name))


def _snapshots(log: Path) -> list[Path]:
    return sorted((log / "__cluster_metadata-0").glob("*.checkpoint"))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), cuts=st.lists(st.integers(0, 10**6), min_size=1, max_size=3))
def test_every_snapshot_created_opened_alone_is_replay_at_its_offset(seed: int, cuts: list[int]) -> None:
    """For generated logs: every snapshot ``snapshot create`` writes, opened directly (alone in a directory), is
    the state ``replay --at`` its end offset - 1 gives from the log (replayed from offset 0), at that offset."""
    with tempfile.TemporaryDirectory() as tmp:
        log = write_history(Path(tmp) / "log", seed, HistorySettings(brokers=3, topics=3, partitions=2, records=120),
                            snapshot_every=10**6).path
        with MetadataHistory(log) as h:
            end = h.end_offset
        for cut in cuts:
            assert main(["snapshot", "create", str(log), "--at", str(cut % (end + 1)), "--timestamp",
                         str(1_700_000_000_000 + cut)]) in (0, 1)  # (1: no state published at or before it)
        created = _snapshots(log)
        for snapshot in created:
            alone = _alone(snapshot, Path(tmp) / "alone")
            with MetadataHistory(alone) as opened:
                got = opened.state_at()
            with MetadataHistory(log) as h:
                want = h.state_at_point(parse_point(str(got.offset)), use_snapshots=False)
            assert got.offset == SnapshotReader(alone).snapshot_id.end_offset - 1  # type: ignore[union-attr]
            assert image_digest(got.image) == image_digest(want.image)
            assert got.timestamp == SnapshotReader(alone).verify().last_contained_log_timestamp


def test_the_generators_snapshots_opened_alone_are_the_logs_states(generated: Path, tmp_path: Path) -> None:
    snapshots = _snapshots(generated)
    assert len(snapshots) >= 2
    for snapshot in snapshots:
        with MetadataHistory(_alone(snapshot, tmp_path)) as opened, MetadataHistory(generated) as h:
            got = opened.state_at()
            assert got.start.kind == "checkpoint" and got.records_replayed == 0
            assert image_digest(got.image) == image_digest(h.state_at(got.offset, use_snapshots=False).image)


def test_replay_of_a_file_is_replay_of_the_log_at_its_offset(generated: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The file inside its own log directory: only it is read (not the log's end, nor a later snapshot)."""
    first = _snapshots(generated)[0]
    end = int(first.name[:20]) - 1
    assert main(["replay", str(first), "--format", "json"]) == 0
    from_file = capsys.readouterr().out
    assert main(["replay", str(generated), "--at", str(end), "--no-snapshots", "--format", "json"]) == 0
    assert capsys.readouterr().out == from_file
    assert main(["replay", str(first)]) == 0
    assert capsys.readouterr().out.startswith(f"offset {end} at ")


def test_every_reading_verb_opens_a_file(generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = _alone(_snapshots(generated)[-1], tmp_path)
    end = int(snapshot.name[:20]) - 1
    with MetadataHistory(snapshot) as h:
        topic = sorted(h.state_at().image.topics_by_name)[0]
    runs = {
        ("shell", str(snapshot), "-c", "ls /image/topics/byName"): topic,
        ("history", str(snapshot), "--topic", topic): f"{end} ",
        ("why", str(snapshot), f"{topic}-0"): f"{topic}-0 at offset {end}",
        ("diff", str(snapshot), str(generated)): f"A: {snapshot} at offset {end}",
        ("diff", str(snapshot), "--from", "start", "--to", "end"): f"changes from start to offset {end}",
        ("quorum", "describe", str(snapshot)): f"LogStartOffset:         {end + 1}",
        ("quorum", "history", str(snapshot)): snapshot.name,
        ("log", "dump", str(snapshot), "--no-records"): f"Snapshot end offset: {end + 1}",
    }
    for argv, expected in runs.items():
        assert main(list(argv)) == 0, argv
        out, _ = capsys.readouterr()
        assert expected in out, (argv, out)


def test_history_says_a_snapshot_keeps_none(generated: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = _alone(_snapshots(generated)[0], tmp_path)
    end = int(snapshot.name[:20]) - 1
    assert main(["history", str(snapshot), "--features"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1].startswith(f"{end} ") and "created there" in err
    assert main(["history", str(snapshot), "--features", "--to", str(end - 1)]) == 0
    assert "the snapshot's state is not between --from start and --to" in capsys.readouterr().err
    assert main(["history", str(snapshot), "--topic", "no-such-topic"]) == 0
    assert "topic no-such-topic never existed" in capsys.readouterr().err


def test_points_a_snapshot_does_not_hold(generated: Path, tmp_path: Path) -> None:
    snapshot = _alone(_snapshots(generated)[0], tmp_path)
    end = int(snapshot.name[:20]) - 1
    with MetadataHistory(snapshot) as h:
        taken = h.state_at().timestamp
        assert taken is not None
        assert h.state_at_point(parse_point(f"{taken}ms")).offset == end
        for text in (str(end - 1), f"{taken - 1}ms"):
            with pytest.raises(PointError):
                h.state_at_point(parse_point(text))
        with pytest.raises(PointError, match="single snapshot file"):
            h.state_at(use_snapshots=False)
        with pytest.raises(PointError, match="state images are kept beside a log directory"):
            h.write_images(10)


@pytest.mark.parametrize("argv", [["log", "append"], ["log", "recover"], ["log", "follow"], ["log", "verify"],
                                  ["snapshot", "create"], ["snapshot", "images"]])
def test_verbs_that_need_a_log_refuse_a_file(argv: list[str], generated: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = _alone(_snapshots(generated)[0], tmp_path)
    before = snapshot.read_bytes()
    assert main([*argv, str(snapshot)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and str(snapshot) in err and "single snapshot file" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [snapshot.name] and snapshot.read_bytes() == before


def test_a_file_opens_read_only(generated: Path, tmp_path: Path) -> None:
    snapshot = _alone(_snapshots(generated)[0], tmp_path)
    with pytest.raises(LogError, match="single snapshot file"):
        MetadataLog.open(snapshot, Mode.WRITE)
    odd = Path(shutil.copy(snapshot, tmp_path / "backup.checkpoint"))
    with pytest.raises(LogError, match="not a snapshot name"):
        MetadataLog.open(odd)
    with pytest.raises(LogError, match="no such snapshot file"):
        MetadataLog.open(tmp_path / "00000000000000000001-0000000001.checkpoint")


def _damaged(snapshot: Path, how: str) -> None:
    data = bytearray(snapshot.read_bytes())
    if how == "crc":
        data[len(data) // 2] ^= 0xFF
        snapshot.write_bytes(bytes(data))
    else:  # torn: the file cut inside its records, so no footer
        snapshot.write_bytes(bytes(data[:len(data) // 2]))


@pytest.mark.parametrize("how", ["crc", "torn"])
@pytest.mark.parametrize("argv", [["replay", "F"], ["replay", "F", "--format", "json"], ["shell", "F", "-c", "ls"],
                                  ["history", "F", "--features"], ["why", "F", "--broker", "1"],
                                  ["diff", "F", "--from", "start", "--to", "end"], ["diff", "F", "F"],
                                  ["quorum", "describe", "F"], ["quorum", "history", "F"]])
def test_a_damaged_file_is_one_line_naming_it_and_the_byte(argv: list[str], how: str, generated: Path,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = _alone(_snapshots(generated)[0], tmp_path)
    _damaged(snapshot, how)
    try:
        SnapshotReader(snapshot).verify()
    except LogError as e:
        verified = str(e)
    assert main([str(snapshot) if a == "F" else a for a in argv]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"metalog: error: {verified}\n"
    assert f"{snapshot}, byte " in err
