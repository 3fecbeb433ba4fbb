"""The growth tables (analysis.outputs.growth): records per minute by type and the log's bytes equal a recount from
what ``log dump`` reads, batch by batch, for random logs; the leadership rows are ``quorum history``'s; a
snapshot's time is the log time of the last batch it holds; the report's growth view draws what the tables say."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.analysis.clusters import cluster_logs
from metalog.analysis.outputs.growth import MINUTE_MS, ClusterGrowth, read_growth
from metalog.analysis.outputs.growth_tables import GROWTH_TABLES, read_csv, write_growth
from metalog.analysis.outputs.report.growth import growth_view, leader_code, top_types
from metalog.analysis.outputs.report.series import Steps
from metalog.cli.main import main
from metalog.codec.messages import LeaderChangeMessage
from metalog.codec.messages import leader_change_message as lcm
from metalog.log import Durability, LogConfig, MetadataLog, Mode
from metalog.log.control import MESSAGES
from metalog.log.dump import FileDump, batch_json, kafka_type_name
from tests.analysis import crafted as c

RECORDS = [c.rec("NoOpRecord"), c.feature(17), c.zk_state(c.MIGRATION), *c.topic(7, [[1, 2]]),
           c.rec("ConfigRecord", resource_type=2, resource_name="t7", name="retention.ms", value="1000")]
CONTROL_TYPES = {name: control.name for control, name in MESSAGES.items()}  # LeaderChangeMessage -> LEADER_CHANGE


def election(leader: int) -> tuple[LeaderChangeMessage, int]:
    return LeaderChangeMessage(version=0, leader_id=leader, voters=[lcm.Voter(voter_id=v) for v in (1, 2, 3)],
                               granting_voters=[lcm.Voter(voter_id=leader)]), 0


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, int, list[int]]]:
    """(data or election, time step in ms, record indexes or the leader) per batch; time may step back."""
    steps = []
    for _ in range(draw(st.integers(1, 40))):
        step = draw(st.integers(-90_000, 400_000))
        if draw(st.integers(0, 5)) == 0:
            steps.append(("election", step, [draw(st.integers(1, 3))]))
        else:
            steps.append(("data", step, draw(st.lists(st.integers(0, len(RECORDS) - 1), min_size=1, max_size=6))))
    return steps


INT64_MIN = -(1 << 63)


def write_history(path: Path, history: list[tuple[str, int, list[int]]], segment_bytes: int = 1 << 30,
                  start: int = c.T0) -> Path:
    """The batches stamped from ``start`` on, never before 0 (or, from a start before 0, int64's first ms)."""
    epoch, at, floor = 1, start, INT64_MIN if start < 0 else 0
    config = LogConfig(segment_bytes=segment_bytes, durability=Durability.NONE, cluster_id=path.name)
    with MetadataLog.open(path, Mode.CREATE, config=config) as log:
        for kind, step, items in history:
            at = max(at + step, floor)
            if kind == "election":
                epoch += 1
                log.append_control([election(items[0])], epoch=epoch, timestamp=at)
            else:
                log.append([RECORDS[i] for i in items], epoch=epoch, timestamp=at, batch_size=1 + len(items) // 2)
    return path


def recount(path: Path) -> tuple[dict[tuple[int, str], list[int]], dict[int, list[int]]]:
    """From what log dump reads: (minute, kafka-dump-log type name) -> [records, value bytes], and minute ->
    [batches, batch bytes]."""
    by_type: dict[tuple[int, str], list[int]] = {}
    by_minute: dict[int, list[int]] = {}
    segments = sorted((path / "__cluster_metadata-0").glob("*.log"))
    previous = None
    for segment in segments:
        dump = FileDump(segment, previous)
        for batch in dump:
            b = batch_json(batch)
            minute = max(b["maxTimestamp"] // MINUTE_MS * MINUTE_MS, INT64_MIN)  # int64's first minute is cut short
            sizes = by_minute.setdefault(minute, [0, 0])
            sizes[0] += 1
            sizes[1] += b["sizeInBytes"]
            for r in b["records"]:
                name = (r["control"] if b["isControl"] else r["payload"])["type"]
                counts = by_type.setdefault((minute, name), [0, 0])
                counts[0] += 1
                counts[1] += len(bytes.fromhex(r["value"]))
        assert dump.damage is None
        previous = dump
    return by_type, by_minute


def dump_name(record_type: str) -> str:
    return CONTROL_TYPES.get(record_type) or kafka_type_name(record_type)


@pytest.mark.slow  # 1.5 s or more of CPU
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), small_segments=st.booleans(), early=st.booleans())
def test_growth_equals_a_recount_from_log_dump(tmp_path_factory: pytest.TempPathFactory,
                                               history: list[tuple[str, int, list[int]]],
                                               small_segments: bool, early: bool) -> None:
    """``early``: the log is stamped from int64's first minute on (any int64 is a batch time; that minute is cut
    short, its bucket starts at -2^63)."""
    path = write_history(tmp_path_factory.mktemp("growth") / "g", history, 600 if small_segments else 1 << 30,
                         INT64_MIN + 30_000 if early else c.T0)
    growth = read_growth(path, "g")
    by_type, by_minute = recount(path)
    assert {(r.minute, dump_name(r.record_type)): [r.records, r.bytes] for r in growth.growth} == by_type
    assert len(growth.growth) == len(by_type)
    assert [(m.minute, m.batches, m.batch_bytes) for m in growth.log_size] == [
        (minute, *sizes) for minute, sizes in sorted(by_minute.items())]
    total = 0
    for m in growth.log_size:  # the log's bytes: every batch stamped before the minute ends
        total += m.batch_bytes
        assert m.log_bytes == total
    assert total == sum(p.stat().st_size for p in (path / "__cluster_metadata-0").glob("*.log"))
    assert [(r.minute, r.record_type) for r in growth.growth] == sorted((r.minute, r.record_type)
                                                                        for r in growth.growth)


def quorum_history_rows(path: Path) -> list[dict[str, Any]]:
    text = io.StringIO()
    with redirect_stdout(text):
        assert main(["quorum", "history", str(path), "--json"]) == 0
    return [json.loads(line) for line in text.getvalue().splitlines()]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories())
def test_the_leadership_rows_and_lane_are_quorum_historys(tmp_path_factory: pytest.TempPathFactory,
                                                          history: list[tuple[str, int, list[int]]]) -> None:
    """Every epoch's start as ``metalog quorum history`` shows it: each election, and an epoch whose
    LeaderChangeMessage is not in the log (here the first: the log's first batches are epoch 1's data)."""
    root = tmp_path_factory.mktemp("lead")
    path = write_history(root / "q", history)
    growth = read_growth(path, "q")
    rows = [r for r in quorum_history_rows(path) if r["event"] in ("election", "epoch")]
    assert [(g.offset, g.timestamp, g.epoch, g.leader, g.record) for g in growth.leadership] == [
        (r["offset"], r["timestamp"], r["leaderEpoch"], r["leaderId"], r["record"]) for r in rows]
    assert [g.voters for g in growth.leadership] == [",".join(str(v["replicaId"]) for v in r["voters"])
                                                     for r in rows]
    out = root / "out"
    write_growth(out, cluster_logs([str(path)]), csv=True)
    assert [(r["offset"], r["epoch"], r["leader"]) for r in read_csv(out / "controller_leadership.csv")] == [
        (r["offset"], r["leaderEpoch"], r["leaderId"]) for r in rows]
    lane = growth_view(growth, c.T0, c.T0 + 1000)["lanes"]["lanes"][0]
    runs = unpack(lane, c.T0)
    assert [lane["codes"][v] for v in runs.values] == [
        leader_code(g) for g in growth.leadership]  # an epoch a run, even when its leader led the one before
    times = [r["timestamp"] for r in rows]
    assert runs.times == [max(times[:i + 1]) for i in range(len(times))]  # drawn in order where time steps back


def unpack(series: dict[str, Any], t0: int) -> Steps:
    times, at = [], t0
    for delta in series["t"]:
        at += delta
        times.append(at)
    return Steps(times, list(series["v"]))


def test_a_snapshots_time_is_the_log_time_of_its_last_batch(tmp_path: Path) -> None:
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history as generate

    out = generate(tmp_path / "gen", 5, HistorySettings(records=3000), snapshot_every=700)
    growth = read_growth(out.path, "gen")
    with MetadataLog.open(out.path) as log:
        ids = log.snapshot_ids()
        times = {b.last_offset: b.max_timestamp for b in log.batches()}
        files = {p.name: p.stat().st_size for p in log.directory.glob("*.checkpoint")}
    assert len(ids) >= 4
    assert [(s.end_offset, s.epoch, s.file) for s in growth.snapshots] == [(i.end_offset, i.epoch, i.file_name)
                                                                          for i in ids]
    assert all(s.timestamp == times[s.end_offset - 1] for s in growth.snapshots)  # (the generator ends batches there)
    assert {s.file: s.bytes for s in growth.snapshots} == files
    for s in growth.snapshots:  # its data records, as log dump reads the file
        dumped = [batch_json(b) for b in FileDump(out.path / "__cluster_metadata-0" / s.file)]
        assert s.records == sum(b["count"] for b in dumped if not b["isControl"]) > 0


def test_a_damaged_snapshot_is_the_error_log_verify_names(tmp_path: Path) -> None:
    """Cut after its header batch, a snapshot's first batch still reads: the whole file is read, as log verify
    reads it, and its damage is one error naming the file and the byte (before: a row with the cut size)."""
    from metalog.errors import MetalogError
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history as generate

    out = generate(tmp_path / "gen", 5, HistorySettings(records=1500), snapshot_every=700)
    snapshot = sorted((out.path / "__cluster_metadata-0").glob("*.checkpoint"))[0]
    header = next(iter(FileDump(snapshot)))
    with open(snapshot, "r+b") as f:
        f.truncate(header.size_in_bytes + 20)
    with pytest.raises(MetalogError, match=rf"{snapshot.name}.*byte {header.size_in_bytes}"):
        read_growth(out.path, "gen")


def test_the_tables_in_parquet_and_csv_hold_the_same_rows(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from metalog.analysis.outputs.tables import read_table

    history = [("data", 70_000 * i, [i % len(RECORDS), 0]) for i in range(30)] + [("election", 5, [2])]
    a, b = write_history(tmp_path / "a", history), write_history(tmp_path / "=b", history[:7])
    out = tmp_path / "out"
    written = write_growth(out, cluster_logs([str(a), str(b)]), csv=True)
    assert sorted(p.name for p in written) == sorted([*GROWTH_TABLES, *(f"{t}.csv" for t in GROWTH_TABLES)])
    for table in GROWTH_TABLES:
        rows = read_csv(out / f"{table}.csv")
        assert (rows or table == "snapshots") and read_table(out / table) == sorted(rows, key=lambda r: r["cluster"])
    assert {r["cluster"] for r in read_csv(out / "growth.csv")} == {"a", "=b"}
    assert "'=b" in (out / "growth.csv").read_text()  # a name a spreadsheet would run is neutralised


def test_records_per_minute_shows_the_top_types_and_the_rest_as_other(tmp_path: Path) -> None:
    growth = ClusterGrowth("x")
    from metalog.analysis.outputs.growth import LogMinute, LogMinutes, TypeMinute, TypeMinutes

    names = [f"T{i:02d}Record" for i in range(12)]
    growth.growth = TypeMinutes.of(TypeMinute(c.T0 + m * MINUTE_MS, name, 100 - i, 1) for m in (0, 1, 3)
                                   for i, name in enumerate(names))
    growth.log_size = LogMinutes.of(LogMinute(c.T0 + m * MINUTE_MS, 1, 10, 10 * (k + 1))
                                    for k, m in enumerate((0, 1, 3)))
    chart = growth_view(growth, c.T0, c.T0 + 4 * MINUTE_MS)["charts"][0]
    assert top_types(growth.growth) == names[:8]
    assert [s["label"] for s in chart["series"]] == [*names[:8], "other"]
    other = unpack(chart["series"][-1], c.T0)
    minute = MINUTE_MS
    # T08..T11: 92 + 91 + 90 + 89 a minute; none in minute 2 (no batches) nor after minute 3
    assert (other.times, other.values) == ([c.T0, c.T0 + 2 * minute, c.T0 + 3 * minute, c.T0 + 4 * minute],
                                           [362, 0, 362, 0])


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 11), st.integers(0, 1 << 40)), max_size=60),
       minutes=st.lists(st.integers(0, 9), min_size=1, max_size=10, unique=True),
       sizes=st.lists(st.integers(0, 1 << 45), min_size=10, max_size=10), end=st.integers(0, 12))
def test_the_growth_charts_are_their_rows_recounted(rows: list[tuple[int, int, int]], minutes: list[int],
                                                     sizes: list[int], end: int) -> None:
    """Records per minute (the top 8 types by records, ties by name, the rest added up as "other"; a type's
    minute that comes twice added up; 0 where a minute has no batches) and the log's bytes (each minute's at its
    end, or at the span's end if earlier), against the rule recounted row by row."""
    from metalog.analysis.outputs.growth import LogMinute, LogMinutes, TypeMinute, TypeMinutes
    from metalog.analysis.outputs.report.growth import OTHER, bytes_chart, records_chart
    from metalog.analysis.outputs.report.series import m4, steps

    minute = MINUTE_MS
    growth = TypeMinutes.of(TypeMinute(c.T0 + m * minute, f"T{t:02d}Record", n, 1) for m, t, n in rows)
    had = sorted(minutes)
    log_size = LogMinutes.of(LogMinute(c.T0 + m * minute, 1, 1, sizes[m]) for m in had)
    t0, t1 = c.T0, c.T0 + end * minute
    totals: dict[str, int] = {}
    for _, t, n in rows:
        totals[f"T{t:02d}Record"] = totals.get(f"T{t:02d}Record", 0) + n
    shown = sorted(totals, key=lambda name: (-totals[name], name))[:8]
    per: dict[str, dict[int, int]] = {name: {} for name in [*shown, OTHER]}
    for m, t, n in rows:
        counts = per[f"T{t:02d}Record" if f"T{t:02d}Record" in per else OTHER]
        counts[c.T0 + m * minute] = counts.get(c.T0 + m * minute, 0) + n
    if not per[OTHER]:
        del per[OTHER]
    points = [(c.T0 + m * minute, c.T0 + m * minute) for m in had]
    points += [(c.T0 + (m + 1) * minute, None) for m in had if m + 1 not in had]
    points.sort(key=lambda p: p[0])
    chart = records_chart(growth, log_size, t0, t1)
    assert [s["label"] for s in chart["series"]] == list(per)
    for series, counts in zip(chart["series"], per.values(), strict=True):
        expected = m4(steps([t for t, _ in points], [0 if m is None else counts.get(m, 0) for _, m in points]), t0, t1)
        assert unpack(series, t0) == expected
    times = [c.T0 + had[0] * minute]
    for m in had:
        times.append(max(min(c.T0 + (m + 1) * minute, t1), times[-1]))
    log_bytes = bytes_chart(log_size, [], t0, t1)
    scale = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[log_bytes["unit"]]
    values = [0.0, *(sizes[m] if scale == 1 else round(sizes[m] / scale, 1) for m in had)]
    assert unpack(log_bytes["series"][0], t0) == m4(steps(times, values), t0, t1)


@pytest.mark.slow
def test_analyze_writes_the_growth_tables_and_the_reports_growth_view(tmp_path: Path) -> None:
    """``metalog analyze`` (python engine) writes the four tables and the report's growth view of each cluster:
    the leadership lane, records per minute and the bytes with a mark per snapshot; --help names the columns."""
    pytest.importorskip("pyarrow")
    from metalog.analysis.outputs.tables import read_table

    history = [("data", 30_000, [i % len(RECORDS)]) for i in range(12)] + [("election", 1000, [3]),
                                                                            ("data", 1000, [0])]
    log = write_history(tmp_path / "x", history)
    out = tmp_path / "out"
    assert main(["analyze", str(log), "--out", str(out), "--engine", "python", "--csv"]) == 0
    write_growth(tmp_path / "direct", cluster_logs([str(log)]), csv=True)
    for table in GROWTH_TABLES:
        assert read_table(out / table) == read_table(tmp_path / "direct" / table)
        assert (out / f"{table}.csv").read_bytes() == (tmp_path / "direct" / f"{table}.csv").read_bytes()
    page = (out / "report.html").read_text()
    data = json.loads(page.split('id="metalog-data">', 1)[1].split("</script>", 1)[0])
    view = data["clusters"][0]["growth"]
    assert [lane["codes"] for lane in view["lanes"]["lanes"]] == [["unknown leader, epoch 1", "controller 3, epoch 2"]]
    assert [chart["name"] for chart in view["charts"]] == ["records-per-minute", "log-bytes"]
    assert view["charts"][1]["marks"]["t"] == []  # no snapshot
    assert 'data-view="growth"' in page and "2 leader epochs (controller 3)" in page


def test_help_documents_the_growth_columns(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    text = capsys.readouterr().out
    for table, columns in GROWTH_TABLES.items():
        assert f"\n{table} (" in text
        for column, _, _ in columns:
            assert f"  {column} " in text
