"""report.html and report.png without a browser: the series keep every extreme, the page is one offline file
with every cluster's data, the fleet overview, the per-broker and per-directory views, the events grouped and
folded, the new timeline columns used when present, and a PNG per twelve clusters. The page's script is tested
in Chromium: test_report_browser.py."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.analysis.domain.schema import TIMELINE
from metalog.analysis.outputs.report.data import Cluster, shared_axis
from metalog.analysis.outputs.report.page import MAX_EVENT_ROWS, render_html
from metalog.analysis.outputs.report.png import CLUSTERS_PER_PNG, png_names
from metalog.analysis.outputs.report.series import FINE, Steps, envelope, m4, steps
from tests.analysis import crafted as c
from tests.analysis.oracle import BrokerTables, analyze_python, clusters_of, write_report
from tests.analysis.test_timeline import jbod_transition, zk_migration
from tests.quick import examples


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    result = analyze_python([zk_migration(root / "zk"), jbod_transition(root / "jbod")])
    write_report(root, result.rows, result.events, result.by_broker)
    return root


def page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="metalog-data">(.*?)</script>', page, re.DOTALL)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def unpack(series: dict[str, Any], t0: int) -> Steps:
    times, t = [], t0
    for d in series["t"]:
        t += d
        times.append(t)
    return Steps(times, series["v"])


# ---- series -----------------------------------------------------------------------------------------------
def test_steps_keep_only_the_changes() -> None:
    s = steps([1, 2, 3, 3, 5, 6], [0, 0, 4, 4, 0, 0])
    assert (s.times, s.values) == ([1, 3, 5], [0, 4, 0])
    assert steps([], []).times == []


def test_the_envelope_holds_every_value_in_force_during_a_pixel() -> None:
    """A value holds until the next change: a pixel starts with the value carried in; a one-batch spike inside
    a pixel sets its highest value. Before the series begins and after its last batch: nothing."""
    s = Steps([100, 150, 151, 400], [2, 9, 2, 5])
    lows, highs = envelope(s, 0, 500, 5, until=450)  # pixels of 100 ms
    assert highs == [None, 9, 2, 2, 5] and lows == [None, 2, 2, 2, 5]
    lows, highs = envelope(s, 0, 1000, 10, until=450)  # nothing after the last batch (450)
    assert highs == [None, 9, 2, 2, 5, None, None, None, None, None] and lows == [None, 2, 2, 2, 5] + [None] * 5


@settings(max_examples=examples(60), deadline=None)
@given(values=st.lists(st.integers(0, 1000), min_size=1, max_size=3000), buckets=st.integers(1, 40),
       seed=st.integers(0, 1000))
def test_m4_keeps_every_fine_buckets_extremes_and_last_value(values: list[int], buckets: int, seed: int) -> None:
    """Drawn at the resolution of m4's buckets or coarser, the decimated series has exactly the original's
    envelope: each bucket's lowest, highest and last value survive (the M4 aggregation)."""
    rng = random.Random(seed)
    times = sorted(rng.randrange(0, 10_000) for _ in values)
    full = Steps(times, values)
    small = m4(full, 0, 10_000, buckets)
    assert len(small) <= max(4 * buckets, len(full))
    assert set(zip(small.times, small.values, strict=True)) <= set(zip(full.times, full.values, strict=True))
    for pixels in (buckets, max(buckets // 2, 1), 1):
        if buckets % pixels == 0:  # pixels that cover whole buckets
            assert envelope(small, 0, 10_000, pixels) == envelope(full, 0, 10_000, pixels)


def test_a_one_batch_spike_in_a_long_series_survives_decimation() -> None:
    rng = random.Random(7)
    n = 40 * FINE
    values = [rng.randrange(0, 50) for _ in range(n)]
    values[123_457] = 500
    s = m4(steps(list(range(n)), values), 0, n - 1)
    assert len(s) <= 4 * FINE and max(s.values) == 500
    assert s.times[s.values.index(500)] == 123_457


# ---- the page ---------------------------------------------------------------------------------------------
def test_the_page_is_one_offline_file(report: Path) -> None:
    page = (report / "report.html").read_text()
    assert re.findall(r"<(?:script|link|img|iframe)[^>]*\b(?:src|href)=", page) == []
    assert re.findall(r"\b(?:src|href)=\"(?!#)", page) == []  # the only links lead within the page
    assert "uPlot" in page and "metalogReport" in page  # the library and the page's script, inlined
    assert "Copyright (c) 2022 Leon Sorokin" not in page  # the library's licence travels with metalog, not here
    assert page.count("<script") == 3


def test_every_cluster_has_its_charts_views_and_summary(report: Path) -> None:
    page = (report / "report.html").read_text()
    data = page_data(page)
    assert [c["name"] for c in data["clusters"]] == ["zk", "jbod"]
    assert data["shared"] is True  # the crafted histories overlap in time: one time axis
    for cluster in data["clusters"]:
        assert [ch["name"] for ch in cluster["charts"]] == ["brokers", "offline", "replicas", "sizes"]
        assert [lane["label"] for lane in cluster["lanes"]["lanes"]] == ["phase", "JBOD", "metadata.version"]
        assert [lane["label"] for lane in cluster["brokers"]["lanes"]["lanes"]] == ["broker 1", "broker 2"]
    zk, jbod = data["clusters"]
    assert zk["directories"] is None and len(jbod["directories"]["lanes"]["lanes"]) == 3
    phases = unpack(zk["lanes"]["lanes"][0], zk["t0"])
    codes = zk["lanes"]["lanes"][0]["codes"]
    assert [codes[v] for v in phases.values] == ["pre-migration", "hybrid", "dual-write", "post-migration"]
    assert jbod["events"]["kind"] == ["metadata-version", "metadata-version", "dir-transition", "dir-transition",
                                      "directory-failure"]
    summaries = re.findall(r'<p class="summary">(.*?)</p>', page)
    assert summaries[0].startswith("zk: post-migration since 2023-11-14 22:13:27, JBOD not-started")
    assert "1 aborted transactions" in summaries[0]
    assert "1 directory failures" in summaries[1] and "1 offline replicas" in summaries[1]


def test_the_fleet_overview_has_a_row_per_cluster_linking_to_it(report: Path) -> None:
    page = (report / "report.html").read_text()
    fleet = re.search(r'<table class="sortable fleet">(.*?)</table>', page, re.DOTALL)
    assert fleet is not None
    rows = re.findall(r"<tr><td[^>]*>(.*?)</td>", fleet.group(1))
    assert rows == ['<a href="#c0">zk</a>', '<a href="#c1">jbod</a>']
    assert 'id="c0"' in page and 'id="c1"' in page
    heads = re.findall(r'<th scope="col"><button type="button">(.*?)</button>', fleet.group(1))
    assert heads[:5] == ["cluster", "phase", "JBOD", "metadata.version", "brokers"] and "last change" in heads
    sort_keys = re.findall(r'<td data-sort="([^"]*)">', fleet.group(1))
    assert "post-migration" in sort_keys and "native" in sort_keys


def test_broker_and_directory_views_and_the_failed_directory(report: Path) -> None:
    page = (report / "report.html").read_text()
    directories = re.search(r'<table class="sortable directories">(.*?)</table>', page, re.DOTALL)
    assert directories is not None
    states = re.findall(r'<td data-sort="(online|offline|gone)">', directories.group(1))
    assert states == ["online", "online"]  # d1a and d2a; d1b is gone (its replica moved to LOST): not listed
    assert str(c.uuid(502)) not in directories.group(1)
    failure = re.search(r'<details class="failure"><summary>(.*?)</summary>(.*?)</details>', page, re.DOTALL)
    assert failure is not None
    assert f"broker 1 lost directory {c.uuid(502)}; it held 1 replicas of 1 topics, 0 partitions left without a " \
           "leader" in failure.group(1)
    assert "<td>t1</td><td>1</td><td>-</td>" in failure.group(2)
    assert "Still holding replicas without a real directory: broker 1 (2 MIGRATING, 0 UNASSIGNED)" in page


def test_events_are_grouped_by_kind_and_aborted_transactions_folded(tmp_path: Path) -> None:
    steps_ = [[c.feature(17), c.broker(1, 10), c.unfence(1, 10)]]
    for _ in range(5):
        steps_ += [[c.begin(), *c.topic(9, [[1]])], [c.abort()]]
    a = analyze_python([zk_migration(tmp_path / "zk"), c.write(tmp_path / "tx", steps_)])
    page = render_html(clusters_of(a.rows, a.events, a.by_broker), a.events)
    kinds = dict(re.findall(r'data-kind="([\w-]+)" aria-pressed="true">.*?<span class="count">(\d+)</span>', page))
    assert kinds == {"aborted-transaction": "6", "metadata-version": "2", "phase-change": "4"}
    folds = re.findall(r'<tbody class="fold" data-kind="aborted-transaction" data-cluster="(\w+)">.*?'
                       r'aria-expanded="false">(.*?)</button>', page)
    assert folds == [("zk", "1 aborted transactions in zk, offsets 10 to 10"),
                     ("tx", "5 aborted transactions in tx, offsets 6 to 22")]  # aborts at 6, 10, ..., 22
    assert page.count('data-kind="aborted-transaction" data-cluster="tx" hidden>') == 5  # folded: hidden rows
    main = re.search(r'<tbody class="main">(.*?)</tbody>', page, re.DOTALL)
    assert main is not None and "aborted-transaction" not in main.group(1)
    assert MAX_EVENT_ROWS >= 1000


def one(rows: list[dict[str, Any]]) -> Cluster:
    """A cluster's report from its timeline rows alone."""
    [cluster] = clusters_of(rows, [])
    return cluster


NEW_COLUMNS = ("offline_partitions", "preferred_replica_imbalance")  # Kafka's controller metrics, from the replay work


def synthetic_rows(cluster: str, n: int, start: int, every: int = 1000, **columns: Any) -> list[dict[str, Any]]:
    """Timeline rows without the two controller-metric columns, or with ``columns`` (those, say) added."""
    base = {k: 0 for k in TIMELINE.names if k not in NEW_COLUMNS} | {
        "cluster": cluster, "metadata_version": "3.7-IV2", "zk_migration_state": "NONE", "phase": "native",
        "dir_transition": "not-started", "brokers_unfenced": 3}
    return [{**base, **columns, "last_offset": i, "timestamp": start + i * every} for i in range(n)]


def test_the_new_controller_metric_columns_are_used_when_present() -> None:
    old = render_html([one(synthetic_rows("a", 3, c.T0))], [])
    new = render_html([one(synthetic_rows("b", 3, c.T0, offline_partitions=2,
                                                   preferred_replica_imbalance=1))], [])
    old_series = [s["label"] for ch in page_data(old)["clusters"][0]["charts"] for s in ch["series"]]
    new_series = [s["label"] for ch in page_data(new)["clusters"][0]["charts"] for s in ch["series"]]
    assert "unfenced, not shutting down" in old_series and "offline partitions (no leader)" not in old_series
    assert "active (not fenced)" in new_series and "offline partitions (no leader)" in new_series
    assert "not led by their preferred replica" in new_series
    assert "3 brokers (0 fenced, 0 in controlled shutdown, 0 on ZooKeeper)" in new
    assert "0 partitions (2 offline), 0 offline replicas" in new


def test_a_cluster_name_cannot_break_out_of_the_page() -> None:
    """Names come from directory names: escaped in the HTML, and no "<" at all in the JSON block."""
    name = "</script><script>alert(1)</script><!--"
    page = render_html([one(synthetic_rows(name, 3, c.T0))], [])
    assert page.count("<script") == 3 and "alert(1)</script>" not in page
    assert page_data(page)["clusters"][0]["name"] == name


def test_one_time_axis_only_when_the_clusters_overlap() -> None:
    a, b = one(synthetic_rows("a", 10, c.T0)), one(synthetic_rows("b", 10, c.T0 + 5000))
    far = one(synthetic_rows("far", 10, c.T0 + 10**9))
    assert shared_axis([a, b]) and not shared_axis([a, far]) and not shared_axis([a])
    assert shared_axis([a, b, one(synthetic_rows("c", 10, c.T0 + 9000))])


# ---- the PNG ----------------------------------------------------------------------------------------------
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_the_png_draws_every_cluster(report: Path, tmp_path: Path) -> None:
    pytest.importorskip("PIL", reason="report.png needs Pillow (the analysis extra)")
    width, height = png_size(report / "report.png")
    assert width >= 1500 and height >= 2 * 250  # a row of panels per cluster
    n = CLUSTERS_PER_PNG + 1
    rows = [r for i in range(n) for r in synthetic_rows(f"k{i}", 20, c.T0)]
    written = write_report(tmp_path, rows, [], BrokerTables())
    assert [p.name for p in written] == ["report.html", "report.png", "report-2.png"] == \
        ["report.html", *png_names(n)]
    # a title band and a row of panels per cluster, each drawn alone at the same size: 12 rows, then 1
    assert png_size(tmp_path / "report.png") == (1620, 36 + 270 * CLUSTERS_PER_PNG)
    assert png_size(tmp_path / "report-2.png") == (1620, 36 + 270)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])  # type: ignore[return-value]


@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
def test_the_report_from_the_parquet_tables_equals_the_report_from_the_rows(tmp_path: Path) -> None:
    """The Spark engine's report is built from the written tables, a cluster at a time, the timeline in change
    form: it draws exactly what the report from every row draws."""
    pytest.importorskip("pyarrow")
    from metalog.analysis.clusters import cluster_name
    from metalog.analysis.outputs.report import write_report_from_tables
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history
    from tests.analysis.oracle import analyze_python, write_outputs

    paths = []
    for seed, scenario in ((1, "mixed"), (2, "jbod-transition")):
        paths.append(tmp_path / scenario)
        write_history(paths[-1], seed, HistorySettings(brokers=4, topics=5, partitions=3, records=3000,
                                                       scenario=scenario), snapshot_every=100_000)
    result = analyze_python(paths)
    write_outputs(tmp_path / "tables", result, 60_000, csv=False)
    (tmp_path / "rows").mkdir()
    write_report(tmp_path / "rows", result.rows, result.events, result.by_broker)
    write_report_from_tables(tmp_path / "tables", [cluster_name(p) for p in paths])
    assert (tmp_path / "tables" / "report.html").read_text() == (tmp_path / "rows" / "report.html").read_text()
    if (tmp_path / "rows" / "report.png").exists():  # Pillow installed
        assert (tmp_path / "tables" / "report.png").read_bytes() == (tmp_path / "rows" / "report.png").read_bytes()
    assert not list((tmp_path / "tables").glob(".report-*"))  # the page data's scratch files are gone


def test_a_cluster_heavier_than_a_cores_share_is_read_in_two_parts_and_joined(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``cores``, a cluster heavier than the cores' even share is read as two tasks, its timeline and
    per-directory table, and its per-broker table, failures and events (``split_parts``), which the driver joins
    (with its growth) and compacts: the same report.html and report.png as a task per cluster (a failed
    directory, events, several brokers and directories); clusters of about a core's share stay whole. No task
    reads a cluster's time span again: the driver hands it the one it read."""
    from metalog.analysis.clusters import cluster_name
    from metalog.analysis.engines.python import PythonEngine
    from metalog.analysis.engines.request import AnalysisRequest
    from metalog.analysis.outputs.report import (
        KEYS,
        TIMELINE,
        WHOLE,
        ClusterTask,
        reading,
        split_parts,
        write_report_from_tables,
    )

    logs = [zk_migration(tmp_path / "zk"), jbod_transition(tmp_path / "jbod")]
    names = [cluster_name(p) for p in logs]
    parts: dict[int, list[tuple[str, str]]] = {}
    for cores in (1, 2, 64):
        out = tmp_path / f"cores-{cores}"
        PythonEngine().analyze(AnalysisRequest.of([str(p) for p in logs], out))

        def run(fn: Any, tasks: Any, cores: int = cores) -> Any:
            parts[cores] = [(t.name, t.part) for t in tasks]
            with monkeypatch.context() as patch:
                patch.setattr(reading, "read_span", _span_read_again)
                got = list(map(fn, tasks))
            for task, part in zip(tasks, got, strict=True):  # each part hands over what a compacted cluster keeps
                if isinstance(part, Cluster):  # (a part's page data is in its files: no series)
                    assert (part.charts, part.broker_views, part.directory_views) == ({}, [], []), task
                    assert list(part.lanes) == ["phase"], task
                if task.part == TIMELINE:  # the directories in the timeline's part, not the keys'
                    assert bool(part.directories) == (task.name == names[1]), task
            return got

        write_report_from_tables(out, names, run, cores=cores)
        assert not list(out.glob(".report-*"))
        for page in ("report.html", "report.png"):
            if (tmp_path / "cores-1" / page).exists():
                assert (out / page).read_bytes() == (tmp_path / "cores-1" / page).read_bytes(), (cores, page)
    assert parts[1] == [(name, WHOLE) for name in names]
    assert parts[64] == [(name, part) for name in names for part in (TIMELINE, KEYS)]
    # a share: the heavier of two clusters on 2 cores is split, the lighter not; 5 equal ones on 2 cores stay whole
    task = ClusterTask("out", "a", 0, 0, 1, "scratch", 100, (0, 1))
    heavy = [task, ClusterTask("out", "b", 1, 0, 1, "scratch", 60, (0, 1))]
    assert [(t.name, t.part, t.weight) for t in split_parts(heavy, 2)] == [("a", TIMELINE, 50), ("a", KEYS, 50),
                                                                         ("b", WHOLE, 60)]
    assert split_parts([task] * 5, 2) == [task] * 5


def _span_read_again(out: Path, name: str) -> None:
    raise AssertionError(f"{out}: cluster {name}'s time span read again by its report's task")


ROW = {**{column: 0 for column in TIMELINE.names}, "metadata_version": "3.7-IV2", "zk_migration_state": "NONE",
       "phase": "native", "dir_transition": "not-started"}  # a timeline row's every column


def test_a_compacted_cluster_keeps_what_the_page_and_the_png_draw(tmp_path: Path) -> None:
    """The report from the tables compacts each cluster once its page data is made (the driver's memory): its
    page data goes to a scratch file (streamed into the page), its series go; the page, the summary, the fleet
    row and the PNG are those of the whole cluster, and a series cannot be drawn from what is left."""
    from metalog.analysis.outputs.report.data import chart_json
    from metalog.analysis.outputs.report.page import render_html, write_html
    from metalog.analysis.outputs.report.png import write_png
    from metalog.analysis.outputs.report.summary import fleet_row, summary, summary_line

    times = range(0, 100_000, 1000)
    phases = ["native"] * 20 + ["pre-migration"] * 30 + ["native"] * 10 + ["pre-migration"] * 40
    rows = [{**ROW, "cluster": "c", "last_offset": i, "timestamp": t, "phase": p, "replicas_lost": i % 5,
             "offline_replicas": i % 7} for i, (t, p) in enumerate(zip(times, phases, strict=True))]
    events = [{"cluster": "c", "offset": 3, "timestamp": 3000, "event": "phase-change", "detail": "x"}]
    whole, compacted = clusters_of(rows, events)[0], clusters_of(rows, events)[0]
    compacted.compact(0, tmp_path / "c.json")
    assert (tmp_path / "c.json").read_text() == chart_json(0, compacted) == chart_json(0, whole)
    assert compacted.chart_json == ""  # the text is in the file, not in memory
    write_html(tmp_path / "page.html", [compacted], events)
    assert (tmp_path / "page.html").read_text() == render_html([whole], events)
    assert summary_line("c", compacted.latest, events, compacted.batches) == summary("c", rows, events)
    assert fleet_row("c", compacted.latest, events) == fleet_row("c", whole.latest, events)
    assert compacted.latest.phase_since == 60_000  # where the last phase began
    with pytest.raises(KeyError, match="no series 'replicas_lost' once compacted"):
        compacted.steps("replicas_lost")
    with pytest.raises(ValueError, match="compacted for place 0"):
        chart_json(1, compacted)
    if importlib.util.find_spec("PIL") is not None:
        (tmp_path / "whole").mkdir()
        (tmp_path / "compacted").mkdir()
        write_png(tmp_path / "whole", [whole])
        write_png(tmp_path / "compacted", [compacted])
        assert (tmp_path / "whole" / "report.png").read_bytes() == (tmp_path / "compacted" / "report.png").read_bytes()
        earlier = one([dict(r, cluster="e", timestamp=r["timestamp"] - 50_000) for r in rows])
        with pytest.raises(KeyError, match="read without the PNG's"):  # a fleet's axis, not its own
            write_png(tmp_path / "compacted", [compacted, earlier])


@given(values=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=50))
def test_a_lines_ints_are_the_json_of_their_list(values: list[int]) -> None:
    """A line's ints (an array, or the differences as they are made) become the same text ``json.dumps`` makes of
    them as a list: the page's data is that JSON."""
    from array import array

    from metalog.analysis.outputs.report.series import Ints

    expected = json.dumps(values, separators=(",", ":"))
    assert Ints(array("q", values)).text() == expected
    assert Ints(iter(values)).text() == expected
