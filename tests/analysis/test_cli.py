"""metalog analyze: the files it writes and the columns its help documents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from metalog.analysis.domain.schema import TIMELINE
from metalog.analysis.outputs.tables import parse_bucket, read_table
from metalog.cli.main import main
from tests.analysis.oracle import analyze_log, analyze_python
from tests.analysis.test_timeline import jbod_transition, zk_migration


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_analyze_writes_timelines_and_events_for_a_fleet(tmp_path: Path) -> None:
    zk, jbod = zk_migration(tmp_path / "zk"), jbod_transition(tmp_path / "jbod")
    out = tmp_path / "out"
    assert main(["analyze", str(zk), str(jbod), "--out", str(out), "--engine", "python", "--bucket", "2s",
                 "--csv"]) == 0
    rows = read_table(out / "timeline_batches.csv")
    assert rows == analyze_log(zk).rows + analyze_log(jbod).rows
    buckets = read_table(out / "timeline_buckets.csv")
    # 8 batches a second apart per cluster: buckets of 2 s hold the 2nd, 4th, 6th and 8th
    assert [(b["cluster"], b["last_offset"]) for b in buckets] == (
        [("jbod", o) for o in (8, 12, 14, 16)] + [("zk", o) for o in (9, 15, 18, 21)])
    assert all(b["bucket_start"] % 2000 == 0 and 0 <= b["timestamp"] - b["bucket_start"] < 2000 for b in buckets)
    events = read_table(out / "events.csv")
    assert ("zk", 10, "aborted-transaction") in [(e["cluster"], e["offset"], e["event"]) for e in events]
    assert ("jbod", 15, "directory-failure") in [(e["cluster"], e["offset"], e["event"]) for e in events]


@pytest.mark.parametrize("name", ["timeline_batches", "timeline_buckets", "events"])
def test_parquet_tables_equal_the_csv_tables(tmp_path: Path, name: str) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    assert main(["analyze", str(zk_migration(tmp_path / "zk")), "--out", str(out), "--engine", "python",
                 "--csv"]) == 0
    rows = read_table(out / f"{name}.csv")
    assert rows and read_table(out / name) == rows
    assert [p.name for p in (out / name).iterdir()] == ["cluster=zk"]


def test_csv_only_on_request(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    assert main(["analyze", str(zk_migration(tmp_path / "zk")), "--out", str(out), "--engine", "python"]) == 0
    assert not list(out.glob("*.csv")) and (out / "timeline_batches" / "cluster=zk" / "part-00000.parquet").is_file()


def test_metrics_every_batch_gives_every_batch_time_a_sample(tmp_path: Path) -> None:
    """controller_metrics.om has each series' changes and a sample a minute; --metrics-every-batch a sample of
    every series at every batch time (the last batch of each millisecond)."""
    from metalog.analysis.outputs.openmetrics import FAMILIES, FILE

    log = zk_migration(tmp_path / "zk")
    times = sorted({r["timestamp"] for r in analyze_log(log).rows})
    lines = {}
    for flag in ([], ["--metrics-every-batch"]):
        out = tmp_path / f"out{len(flag)}"
        assert main(["analyze", str(log), "--out", str(out), "--engine", "python", *flag]) == 0
        lines[bool(flag)] = [line for line in (out / FILE).read_text().split("\n") if line[:1] not in ("#", "")]
    stamps = [int(line.rsplit(" ", 1)[1].replace(".", "")) for line in lines[True]]
    assert stamps == times * len(FAMILIES)
    assert len(FAMILIES) * 2 <= len(lines[False]) < len(lines[True]) / 2  # at least the first and last batch times


@pytest.mark.spark
@pytest.mark.slow
def test_spark_engine_end_to_end_is_quiet_and_writes_both_formats(spark_java: None, tmp_path: Path) -> None:
    """The command as users run it, in a process of its own (its own JVM): stderr holds the summary line and
    nothing else (no JVM or Spark startup lines; no progress bar without a terminal); the tables equal the
    python engine's in both formats."""
    pytest.importorskip("pyarrow")
    zk, jbod = zk_migration(tmp_path / "zk"), jbod_transition(tmp_path / "jbod")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "metalog.cli.main", "analyze", str(zk), str(jbod), "--out", str(out),
                           "--master", "local[2]", "--csv"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    expected = analyze_python([zk, jbod])
    assert done.stderr.splitlines() == [f"{expected.records} data records, 16 batches, 2 cluster(s), "
                                        f"{len(expected.events)} events"]  # the python engine's count
    for name, rows in (("timeline_batches", expected.rows), ("events", expected.events)):
        assert read_table(out / f"{name}.csv") == rows  # the clusters in the order given
        assert read_table(out / name) == sorted(rows, key=lambda r: r["cluster"])  # stable: log order kept
    from metalog.analysis.clusters import cluster_logs
    from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, write_growth

    write_growth(tmp_path / "python", cluster_logs([str(zk), str(jbod)]), csv=True)  # (a pass of their own)
    for name in GROWTH_TABLES:  # the growth tables, computed on the executors: the python engine's files
        assert (out / f"{name}.csv").read_bytes() == (tmp_path / "python" / f"{name}.csv").read_bytes()
        assert read_table(out / name) == read_table(tmp_path / "python" / name)


def test_help_documents_every_column(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    text = capsys.readouterr().out
    for column in [*TIMELINE.names, "bucket_start", "event", "detail"]:
        assert f"  {column} " in text


@pytest.mark.parametrize(("text", "ms"), [("500ms", 500), ("30s", 30_000), ("1m", 60_000), ("2h", 7_200_000)])
def test_bucket_widths(text: str, ms: int) -> None:
    assert parse_bucket(text) == ms


@pytest.mark.parametrize("text", ["", "m", "0m", "1w", "-1s", "106751991168d", "9223372036854775808ms"])
def test_bad_bucket_widths(text: str) -> None:
    with pytest.raises(ValueError):
        parse_bucket(text)


def test_without_pyarrow_the_command_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The tables are Arrow record batches written with pyarrow: without it, one line before any work (before:
    the python engine kept every row as a dict and wrote CSV only)."""
    monkeypatch.setattr("metalog.analysis.outputs.tables.has_pyarrow", lambda: False)
    zk = zk_migration(tmp_path / "zk")
    assert main(["analyze", str(zk), "--out", str(tmp_path / "out"), "--engine", "python"]) == 1
    assert capsys.readouterr().err == ("metalog: error: metalog analyze writes its tables with pyarrow: pip install "
                                       "'metalog[analysis]'\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("chosen", [None, "3"])
def test_an_analysis_gives_openblas_one_thread_unless_the_user_chose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    chosen: str | None) -> None:
    """numpy's OpenBLAS (pyarrow imports numpy where it is installed) spins a thread per core a while at its start:
    the command, and the Spark workers it starts, run no BLAS, so one thread; a number the user set stays."""
    import os

    if chosen is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", chosen)
    seen: list[str | None] = []
    monkeypatch.setattr("metalog.cli.analyze.needs_pyarrow", lambda: seen.append(os.environ.get(
        "OPENBLAS_NUM_THREADS")))
    assert main(["analyze", str(zk_migration(tmp_path / "zk")), "--out", str(tmp_path / "out"),
                 "--engine", "python"]) == 0
    assert seen == [chosen or "1"]  # set before pyarrow is first asked for
