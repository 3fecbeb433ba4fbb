"""Generated log directories: deterministic, valid, and their snapshots agree with the log."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from metalog.cli.main import main
from metalog.generate import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from metalog.state.records import image_digest

SMALL = HistorySettings(brokers=4, topics=5, partitions=3, records=3000)


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    same = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not same[1] and not same[2] and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    write_history(tmp_path / "a", 5, SMALL, snapshot_every=1000)
    write_history(tmp_path / "b", 5, SMALL, snapshot_every=1000)
    write_history(tmp_path / "c", 6, SMALL, snapshot_every=1000)
    assert _same_tree(tmp_path / "a", tmp_path / "b")
    assert not _same_tree(tmp_path / "a", tmp_path / "c")


def test_log_replays_to_the_generators_state_and_snapshots_agree(tmp_path: Path) -> None:
    result = write_history(tmp_path / "log", 9, SMALL, snapshot_every=1000)
    assert len(result.snapshots) >= 2
    with MetadataHistory(result.path) as h:
        assert h.end_offset == result.end_offset
        from_zero = h.state_at(use_snapshots=False)
        assert image_digest(from_zero.image) == result.digest
        for snapshot in result.snapshots:
            offset = int(snapshot.name.split("-")[0]) - 1
            assert image_digest(h.state_at(offset).image) == image_digest(h.state_at(offset, use_snapshots=False).image)


def test_generate_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", str(tmp_path / "g"), "--seed", "3", "--records", "500"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wrote 500 data records in ") and "final state digest" in out
    assert main(["generate", str(tmp_path / "g"), "--records", "10"]) == 1  # not over an existing log
    assert "already holds a metadata log" in capsys.readouterr().err


@pytest.mark.parametrize("scenario", ["zk-migration", "mixed", "native"])
def test_no_batch_holds_records_after_an_abort(tmp_path: Path, scenario: str) -> None:
    """Kafka's loader would keep an aborted transaction's records if more followed the abort in its batch; the
    generator's writes end their batch at an abort (MetadataLog.append), as Kafka's controller writes them."""
    from metalog.generate import HistoryGenerator
    from metalog.log import MetadataLog
    from metalog.log.verify import verify_log

    settings = HistorySettings(brokers=4, topics=5, partitions=3, records=3000, scenario=scenario)
    aborts = sum(r.NAME == "AbortTransactionRecord" for _, r, _ in HistoryGenerator(2, settings).records())
    write_history(tmp_path / "log", 2, settings)
    with MetadataLog.open(tmp_path / "log") as log:
        assert sum(r.value is not None and r.value[1] == 25 for r in log.records()) == aborts > 0
    v = verify_log(tmp_path / "log")
    assert v.ok and v.warnings == []
