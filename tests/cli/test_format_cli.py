"""``metalog format`` as a person runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from metalog.cli.main import main
from metalog.codec.uuid import Uuid
from metalog.log import files

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def test_format_and_refuse_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirs = ",".join(str(tmp_path / n) for n in "abc")
    assert main(["format", "--log-dirs", dirs, "--node-id", "2", "--cluster-id", CLUSTER]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith(f"Formatted {tmp_path / 'a'}: directory.id=")
    for n, line in zip("abc", out, strict=True):
        props = files.read_properties(tmp_path / n / "meta.properties")
        assert line.endswith(props["directory.id"]) and not Uuid.parse(props["directory.id"]).is_reserved
        assert (props["node.id"], props["cluster.id"], props["version"]) == ("2", CLUSTER, "1")
    assert main(["format", "--log-dirs", dirs, "--node-id", "2", "--cluster-id", CLUSTER]) == 1
    assert capsys.readouterr().err == (f"metalog: error: Log directory {tmp_path / 'a'} is already formatted. "
                                       "Use --ignore-formatted to skip it.\n")
    assert main(["format", "--log-dirs", dirs + f",{tmp_path / 'd'}", "--node-id", "2", "--cluster-id", CLUSTER,
                 "--ignore-formatted"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 directories were already formatted and left as they were"


def test_release_version_writes_bootstrap_checkpoint_in_each_directory(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from metalog.snapshots.bootstrap import read_bootstrap

    dirs = ",".join(str(tmp_path / n) for n in "ab")
    assert main(["format", "--log-dirs", dirs, "--node-id", "3000", "--cluster-id", CLUSTER,
                 "--release-version", "4.0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == ("bootstrap.checkpoint in each: metadata.version 4.0-IV3 (level 25), group.version 1, "
                      "transaction.version 2")
    for n in "ab":
        assert [(r.name, r.feature_level) for r in read_bootstrap(tmp_path / n / "bootstrap.checkpoint")] == [
            ("metadata.version", 25), ("group.version", 1), ("transaction.version", 2)]
    assert main(["storage", "info", str(tmp_path / "a")]) == 0
    assert "bootstrap.checkpoint: metadata.version 4.0-IV3 (level 25)" in capsys.readouterr().out


def test_without_release_version_no_bootstrap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["format", "--log-dirs", str(tmp_path / "a"), "--node-id", "1", "--cluster-id", CLUSTER]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 and not (tmp_path / "a" / "bootstrap.checkpoint").exists()


@pytest.mark.parametrize(("release", "error"), [
    ("3.2", "--release-version: metadata.version 3.2-IV0 is older than 3.3-IV0, the oldest a KRaft cluster can be "
            "formatted at (Kafka's MINIMUM_BOOTSTRAP_VERSION)"),
    ("5.0", "--release-version: unknown release version '5.0' (give a metadata.version such as 3.9-IV0 or a release "
            "such as 3.9; metalog knows 3.3-IV0 to 4.2-IV1)")])
def test_a_release_version_kafka_cannot_bootstrap_is_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str, error: str) -> None:
    assert main(["format", "--log-dirs", str(tmp_path / "a"), "--node-id", "1", "--cluster-id", CLUSTER,
                 "--release-version", release]) == 1
    assert capsys.readouterr().err == f"metalog: error: {error}\n" and not (tmp_path / "a").exists()


def test_a_bootstrap_file_someone_left_is_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bootstrap.checkpoint").write_bytes(b"left here")
    dirs = f"{tmp_path / 'a'},{tmp_path / 'b'}"
    assert main(["format", "--log-dirs", dirs, "--node-id", "1", "--cluster-id", CLUSTER,
                 "--release-version", "3.9"]) == 1
    assert capsys.readouterr().err == (f"metalog: error: {tmp_path / 'b' / 'bootstrap.checkpoint'} exists in a "
                                       "directory that is not formatted; remove it first if it is not needed\n")
    assert not (tmp_path / "a").exists() and (tmp_path / "b" / "bootstrap.checkpoint").read_bytes() == b"left here"
