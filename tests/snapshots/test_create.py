"""``metalog snapshot create`` writes Kafka's own bytes; ``snapshot images`` writes state images."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from metalog.cli.main import main
from metalog.replay.history import MetadataHistory
from metalog.snapshots import SnapshotReader
from metalog.state.jsonimage import image_to_json
from tests.conftest import load_vectors

SCENARIO = load_vectors()["scenarioJbod"]


@pytest.fixture
def log_dir(tmp_path: Path, jbod_dir: Path) -> Path:
    shutil.copytree(jbod_dir / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    return tmp_path


def test_our_snapshot_of_the_jbod_scenario_is_kafkas_file(log_dir: Path, jbod_dir: Path) -> None:
    assert main(["snapshot", "create", str(log_dir), "--timestamp", "1700000060000"]) == 0
    name = "00000000000000000025-0000000001.checkpoint"
    ours = (log_dir / "__cluster_metadata-0" / name).read_bytes()
    assert ours == (jbod_dir / "snapshot-kraft-v0" / name).read_bytes()


def test_snapshot_at_an_offset_reloads_to_that_state(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "create", str(log_dir), "--at", "12"]) == 0
    assert "the state through offset 12" in capsys.readouterr().out
    path = log_dir / "__cluster_metadata-0" / "00000000000000000013-0000000001.checkpoint"
    assert SnapshotReader(path).verify().records > 0
    with MetadataHistory(log_dir) as h:
        from_snapshot = h.state_at(12)
        assert from_snapshot.start.kind == "checkpoint"
        assert image_to_json(from_snapshot.image) == image_to_json(h.state_at(12, use_snapshots=False).image)


def test_kraft_version_1_needs_voters(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "create", str(log_dir), "--kraft-version", "1"]) == 1
    assert "needs a VotersRecord" in capsys.readouterr().err


def test_images_command(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "images", str(log_dir), "--every", "10"]) == 0
    images = sorted(p.name for p in (log_dir / "metalog-images").iterdir())
    assert images == ["00000000000000000012.image", "00000000000000000020.image"]
    assert main(["replay", str(log_dir), "--format", "json"]) == 0


def test_an_offset_inside_a_batch_rounds_down_to_its_start(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka reads the log after a snapshot from its end offset in whole batches: a snapshot ending inside batch
    15..16 would have Kafka apply offset 16 again on top of a state that already holds it."""
    assert main(["snapshot", "create", str(log_dir), "--at", "15"]) == 0
    out, err = capsys.readouterr()
    assert err == "offset 15 is inside batch 15..16; the snapshot holds the state through 14\n"
    assert out.endswith("00000000000000000015-0000000001.checkpoint: the state through offset 14\n")
    kafka_reads_whole_batches_after(log_dir, 15)


def test_a_transaction_open_at_the_offset_rounds_down_to_before_it(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from tests.analysis import crafted as c

    root = c.write(tmp_path / "tx", [[c.feature(17)], [c.broker(1, 10), c.begin(), c.broker(2, 20)],
                                     [c.broker(3, 30), c.end()], [c.broker(4, 40)]])
    assert main(["snapshot", "create", str(root), "--at", "4"]) == 0  # the Begin at 2 is inside batch 1..3
    out, err = capsys.readouterr()
    assert err == ("a transaction open since offset 2 is not committed at 4; the snapshot holds the state "
                   "through 0\n")
    assert out.endswith("00000000000000000001-0000000001.checkpoint: the state through offset 0\n")
    kafka_reads_whole_batches_after(root, 1)


def test_no_batch_end_before_the_offset_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.analysis import crafted as c

    root = c.write(tmp_path / "first", [[c.feature(17), c.begin(), c.broker(1, 10)], [c.end()]])
    assert main(["snapshot", "create", str(root), "--at", "2"]) == 1
    assert capsys.readouterr().err == ("metalog: error: --at: offset 2: Kafka's loader published no state at the "
                                       "end of a batch at or before it\n")
    assert not list((root / "__cluster_metadata-0").glob("*.checkpoint"))


def test_at_a_time_and_timestamps_in_any_time_form(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "create", str(log_dir), "--at", "2023-11-14T22:13:25.5Z",
                 "--timestamp", "2023-11-14T22:14:20Z"]) == 0
    path = log_dir / "__cluster_metadata-0" / "00000000000000000015-0000000001.checkpoint"
    assert "the state through offset 14" in capsys.readouterr().out
    kafka_reads_whole_batches_after(log_dir, 15)
    assert main(["snapshot", "create", str(log_dir), "--at", "1700000005"]) == 1
    assert "1700000005 looks like epoch seconds: that time is 1700000005000ms" in capsys.readouterr().err
    assert path.exists()


def kafka_reads_whole_batches_after(root: Path, end_offset: int) -> None:
    """What Kafka does with the snapshot ending at ``end_offset``: load it, then read the log from the batch
    holding ``end_offset`` (a log read returns whole batches), loading every batch. That batch must start
    there, and the state at the log's end must be the one replayed from offset 0."""
    from metalog.codec.framing import decode_metadata_record
    from metalog.log import MetadataLog
    from metalog.log.snapshot_files import list_snapshots
    from metalog.snapshots import SnapshotId
    from metalog.state import MetadataLoader

    directory = root / "__cluster_metadata-0"
    path = next(directory / sid.file_name for sid in list_snapshots(directory) if sid.end_offset == end_offset)
    loader = MetadataLoader()
    loader.load_snapshot([decode_metadata_record(r.value).message for r in SnapshotReader(path).records()],
                         end_offset - 1)
    with MetadataLog.open(root) as log:
        batches = list(log.scan(end_offset))
        assert batches[0][0] == end_offset, f"the snapshot ends inside batch {batches[0][0]}..{batches[0][1]}"
        for base, last, _, control, values in batches:
            loader.load_batch(base, values, last_offset=last, is_control=control)
    with MetadataHistory(root) as h:
        assert image_to_json(loader.image) == image_to_json(h.state_at(use_snapshots=False).image)
    assert SnapshotId(end_offset, 1).file_name == path.name
