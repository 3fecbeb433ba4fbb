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
    assert main(["snapshot", "create", str(log_dir), "--time-ms", "1700000060000"]) == 0
    name = "00000000000000000025-0000000001.checkpoint"
    ours = (log_dir / "__cluster_metadata-0" / name).read_bytes()
    assert ours == (jbod_dir / "snapshot-kraft-v0" / name).read_bytes()


def test_snapshot_at_an_offset_reloads_to_that_state(log_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "create", str(log_dir), "--offset", "12"]) == 0
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
