"""What names a cluster in the analysis' tables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metalog.analysis.clusters import ClusterLog, cluster_logs, cluster_name
from metalog.analysis.outputs.tables import read_table
from metalog.cli.main import main
from metalog.errors import MetalogError
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.log.files import read_properties
from tests.analysis.test_timeline import jbod_transition, zk_migration


def test_a_directory_name_that_is_not_utf8_has_its_bytes_escaped(tmp_path: Path) -> None:
    assert cluster_name(Path(os.fsdecode(b"caf\xe9-\xff"))) == "caf\\xe9-\\xff"
    assert cluster_name(tmp_path / "café") == "café"


def without_cluster_id(log: Path, name: str) -> Path:
    """``log`` moved to ``name`` beside it, without meta.properties: named by its directory."""
    (log / "meta.properties").unlink()
    return log.rename(log.with_name(name))


def test_analyze_a_log_directory_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """Before: UnicodeEncodeError from pyarrow (and from the CSV and report writers)."""
    pytest.importorskip("pyarrow")
    log = without_cluster_id(jbod_transition(tmp_path / "jbod"), os.fsdecode(b"caf\xe9"))
    out = tmp_path / "out"
    assert main(["analyze", str(log), "--out", str(out), "--engine", "python", "--csv"]) == 0
    rows = read_table(out / "timeline_batches")
    assert rows and {r["cluster"] for r in rows} == {"caf\\xe9"}
    assert read_table(out / "timeline_batches.csv") == rows
    assert 'cluster="caf\\\\xe9"' in (out / "controller_metrics.om").read_text()


def test_a_name_given_that_is_not_utf8_has_its_bytes_escaped(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """NAME=LOGDIR with bytes that are not UTF-8 on the command line (Python holds them as surrogates). Before: a
    UnicodeEncodeError traceback from the .om writer; now the name the directory rule gives, and two names that
    read the same are refused."""
    pytest.importorskip("pyarrow")
    log = jbod_transition(tmp_path / "jbod")
    out = tmp_path / "out"
    named = os.fsdecode(b"caf\xe9=") + str(log)
    assert main(["analyze", named, "--out", str(out), "--engine", "python", "--csv"]) == 0
    rows = read_table(out / "timeline_batches")
    assert rows and {r["cluster"] for r in rows} == {"caf\\xe9"}
    assert read_table(out / "timeline_batches.csv") == rows
    assert 'cluster="caf\\\\xe9"' in (out / "controller_metrics.om").read_text()
    capsys.readouterr()
    assert main(["analyze", named, f"caf\\xe9={log}", "--out", str(tmp_path / "two"), "--engine", "python"]) == 1
    assert "metalog: error: two clusters named 'caf" in capsys.readouterr().err
    assert not (tmp_path / "two").exists()


def test_a_cluster_is_named_by_its_cluster_id_else_by_its_directory(tmp_path: Path) -> None:
    """Before: always the directory's name."""
    log = tmp_path / "a"
    write_history(log, 5, HistorySettings(brokers=3, topics=2, partitions=1, records=50))
    cluster_id = read_properties(log / "meta.properties")["cluster.id"]
    assert len(cluster_id) == 22 and cluster_name(log) == cluster_id
    (log / "meta.properties").write_text("version=1\nnode.id=1\n")  # none in it: the directory's name
    assert cluster_name(log) == "a"
    (log / "meta.properties").unlink()
    assert cluster_name(log) == "a"


def test_name_equals_logdir_names_a_cluster(tmp_path: Path) -> None:
    (tmp_path / "x=y").mkdir()  # a path that exists is a path, "=" or not
    assert cluster_logs([f"eu={tmp_path / 'a'}", str(tmp_path / "x=y"), tmp_path / "b=c"]) == [
        ClusterLog("eu", str(tmp_path / "a")), ClusterLog("x=y", str(tmp_path / "x=y")),
        ClusterLog("b=c", tmp_path / "b=c")]  # (a Path is always a path)
    for bad in ("=a", "eu="):
        with pytest.raises(MetalogError, match="NAME=LOGDIR"):
            cluster_logs([bad])


def test_two_clusters_with_one_name_are_refused_before_any_work(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the second was named "zk'" (a suffix nobody chose)."""
    zk = zk_migration(tmp_path / "zk")
    other = zk_migration(tmp_path / "other" / "zk")
    out = tmp_path / "out"
    assert main(["analyze", str(zk), str(other), "--out", str(out), "--engine", "python"]) == 1
    assert capsys.readouterr().err == (f"metalog: error: two clusters named 'zk': {zk} and {other}; name them apart "
                                       "with NAME=LOGDIR\n")
    assert not out.exists()
    assert main(["analyze", str(zk), f"zk2={other}", "--out", str(out), "--engine", "python", "--csv"]) == 0
    assert [r["cluster"] for r in read_table(out / "events.csv") if r["offset"] == 10] == ["zk", "zk2"]
