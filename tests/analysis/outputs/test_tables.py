"""The analysis' tables on disk: CSV cells a spreadsheet cannot run, and an output directory that is the analysis'
own (``analyze --out`` never deletes what it did not write)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metalog.analysis.outputs.layout import TABLES, kind
from metalog.analysis.outputs.report.summary import fmt_time
from metalog.analysis.outputs.tables import (
    FORMULA_STARTS,
    MARKER,
    bucket_start,
    bucket_starts,
    csv_cell,
    csv_value,
    read_table,
)
from metalog.cli.main import main
from metalog.codec.framing import encode_metadata_record
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.builder import build_data_batch
from tests.analysis import crafted as c
from tests.analysis.test_timeline import jbod_transition


@given(st.text())
def test_a_csv_cell_never_starts_a_formula_and_reads_back_exactly(text: str) -> None:
    cell = csv_cell(text)
    assert not cell.startswith(FORMULA_STARTS)
    assert csv_value(cell) == text


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "'=1"])
def test_cells_a_spreadsheet_reads_as_formulas_get_a_quote(text: str) -> None:
    assert csv_cell(text) == "'" + text


def test_plain_text_is_written_as_it_is() -> None:
    assert csv_cell("hybrid -> dual-write") == "hybrid -> dual-write"
    assert csv_cell("") == ""


def _formula_cluster(root: Path) -> Path:
    """A cluster whose directory name and topic name a spreadsheet would run as formulas."""
    d1, d2 = c.uuid(501), c.uuid(502)
    return c.write(root, [
        [c.feature(17), c.broker(1, 10, dirs=[d1, d2]), c.unfence(1, 10),
         c.rec("TopicRecord", name="@SUM(1)", topic_id=c.uuid(1)),
         c.rec("PartitionRecord", 1, partition_id=0, topic_id=c.uuid(1), replicas=[1], isr=[1], leader=1,
               leader_epoch=0, partition_epoch=0, directories=[d1])],
        [c.rec("BrokerRegistrationChangeRecord", 2, broker_id=1, broker_epoch=10, log_dirs=[d2])],  # d1 fails
    ])


def test_csv_text_is_neutralised_numbers_are_not_and_parquet_keeps_the_raw_values(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    log = _formula_cluster(tmp_path / "=HYPERLINK(1)")
    out = tmp_path / "out"
    assert main(["analyze", str(log), "--out", str(out), "--engine", "python", "--csv"]) == 0
    for table, columns in TABLES.items():
        with open(out / f"{table}.csv", newline="") as f:
            cells = list(csv.DictReader(f))
        assert cells, table
        for row in cells:
            assert not any(row[col].startswith(FORMULA_STARTS) for col in columns if kind(col) == "string"), row
            assert all(re.fullmatch(r"-?\d+", row[col]) for col in columns if kind(col) != "string"), row
        assert {row["cluster"] for row in cells} == {"'=HYPERLINK(1)"}
        assert read_table(out / f"{table}.csv") == read_table(out / table)  # read back: the raw values
    failures = read_table(out / "directory_failures")
    assert [(f["cluster"], f["topic"], f["leader"]) for f in failures] == [("=HYPERLINK(1)", "@SUM(1)", 1)]


def _analyze(logdir: Path, out: Path) -> int:
    return main(["analyze", str(logdir), "--out", str(out), "--engine", "python", "--csv"])


def test_out_refuses_a_directory_holding_files_it_did_not_write(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the table directories in --out were removed with whatever they held."""
    out = tmp_path / "out"
    (out / "events").mkdir(parents=True)
    (out / "events" / "mine.txt").write_text("the user's")
    (out / "notes.txt").write_text("the user's too")
    assert _analyze(jbod_transition(tmp_path / "jbod"), out) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"--out {out}" in error and MARKER in error
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["events", "events/mine.txt", "notes.txt"]


def test_out_refuses_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").write_text("x")
    assert _analyze(jbod_transition(tmp_path / "jbod"), tmp_path / "out") == 1
    assert "not a directory" in capsys.readouterr().err and (tmp_path / "out").read_text() == "x"


def test_out_takes_an_empty_directory_and_replaces_its_own_tables_only(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    out.mkdir()
    log = jbod_transition(tmp_path / "jbod")
    assert _analyze(log, out) == 0
    assert (out / MARKER).is_file()
    first = read_table(out / "timeline_batches")
    (out / "notes.txt").write_text("the user's, beside the analysis")
    assert _analyze(log, out) == 0  # an analysis of its own: replaced
    assert read_table(out / "timeline_batches") == first
    assert (out / "notes.txt").read_text() == "the user's, beside the analysis"


INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


@given(INT64, st.integers(1, (1 << 63) - 1))
def test_a_bucket_starts_within_int64_at_or_before_its_time(timestamp: int, width: int) -> None:
    start = bucket_start(timestamp, width)
    assert -(1 << 63) <= start <= timestamp
    assert timestamp - start < width
    assert start % width == 0 or start == -(1 << 63)  # a multiple of the width, or the first int64


@given(INT64)
def test_the_report_formats_any_int64_time(ms: int) -> None:
    text = fmt_time(ms)
    assert text == f"{ms}ms" or re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", text)
    assert fmt_time(1_700_000_000_000) == "2023-11-14 22:13:20"


EXTREME_TIMES = [1 << 62, (1 << 63) - 1, -(1 << 63), -62_135_596_800_001, 0]  # (before year 1)


def extreme_times(root: Path, times: list[int] = EXTREME_TIMES) -> Path:
    """A log whose batches are stamped ``times``."""
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(durability=Durability.NONE)) as log:
        for n, timestamp in enumerate(times):
            records = [c.feature(17), c.broker(1, 10), c.unfence(1, 10)] if n == 0 else [c.zk_state(c.NONE)]
            log.append_batch(build_data_batch(0, [encode_metadata_record(*r) for r in records], epoch=1,
                                              timestamp=timestamp))
    return root


def test_the_python_engine_takes_any_int64_batch_time(tmp_path: Path) -> None:
    """Before: OverflowError writing timeline_buckets (the bucket of -2^63 starts before it), ValueError from the
    report's times."""
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    assert main(["analyze", str(extreme_times(tmp_path / "log")), "--out", str(out), "--engine", "python",
                 "--csv"]) == 0
    assert [r["timestamp"] for r in read_table(out / "timeline_batches")] == EXTREME_TIMES
    assert read_table(out / "timeline_batches.csv") == read_table(out / "timeline_batches")
    assert sorted(r["bucket_start"] for r in read_table(out / "timeline_buckets")) == [
        -(1 << 63), -62_135_596_860_000, 0, (1 << 62) // 60_000 * 60_000, ((1 << 63) - 1) // 60_000 * 60_000]
    assert "4611686018427387904ms" in (out / "report.html").read_text()


@given(times=st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), -(2**63) + 10**9)),
                      max_size=20), width=st.sampled_from((1, 7, 60_000, 3_600_000)))
def test_bucket_starts_is_bucket_start_of_each(times: list[int], width: int) -> None:
    """The writers' comprehension, int64's first bucket (cut short, starting at -2^63) included."""
    assert bucket_starts(times, width) == [bucket_start(t, width) for t in times]
