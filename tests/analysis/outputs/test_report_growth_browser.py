"""The report's growth view in headless Chromium: the leadership lane, records per minute by type and the bytes
with the snapshots marked, drawn from the growth tables of ``metalog analyze`` on the cluster's time axis."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.outputs.growth import MINUTE_MS, ClusterGrowth, read_growth
from metalog.cli.main import main
from metalog.codec.messages import NoOpRecord
from metalog.log import MetadataLog, Mode
from tests.analysis.chromium import BINARY, Chromium
from tests.analysis.outputs.test_growth import election

pytestmark = [pytest.mark.slow,  # a browser of its own
              pytest.mark.skipif(BINARY is None, reason="no chromium on PATH (apt-get install -y chromium) to run "
                                                        "the report's page")]
READY = "window.metalogReport && window.metalogReport.ready"
LEADERS = (2, 3, 1, 3)  # the controllers that lead the epochs after the generated log's own (its leader 3000)


def grown_log(root: Path) -> Path:
    """A generated history with snapshots, then four elections, each followed by an hour of NoOpRecords."""
    from metalog.generate.generator import HistorySettings
    from metalog.generate.writer import write_history

    gen = write_history(root / "grown", 11, HistorySettings(records=3000), snapshot_every=800)
    with MetadataLog.open(gen.path, Mode.WRITE) as log:
        at = max(b.max_timestamp for b in log.batches())
        epoch = log.latest_epoch or 1
        for leader in LEADERS:
            epoch += 1
            at += 60_000
            log.append_control([election(leader)], epoch=epoch, timestamp=at)
            for _ in range(60):
                at += 60_000
                log.append([(NoOpRecord(), 0)] * (1 + leader), epoch=epoch, timestamp=at)
    return gen.path


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ClusterGrowth]:
    root = tmp_path_factory.mktemp("growth")
    log = grown_log(root)
    assert main(["analyze", f"grown={log}", "--out", str(root / "out"), "--engine", "python"]) == 0
    return root / "out", read_growth(log, "grown")


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory, analysed: tuple[Path, ClusterGrowth]) -> Iterator[Chromium]:
    with Chromium(tmp_path_factory.mktemp("profile"), width=1280, height=1000) as browser:
        browser.open((analysed[0] / "report.html").as_uri(), READY)
        browser.eval("window.metalogReport.drawAll()")
        yield browser


def js(b: Chromium, body: str) -> Any:
    return json.loads(b.eval(f"""(() => {{
        const chart = name => window.metalogReport.charts.find(c => c.cluster === "grown" && c.name === name);
        return JSON.stringify((() => {{ {body} }})() ?? null);
    }})()"""))


def test_the_growth_view_is_drawn_on_the_clusters_time_axis(b: Chromium) -> None:
    assert b.problems() == []
    names = js(b, "return window.metalogReport.charts.map(c => c.name)")
    assert names[-3:] == ["controller-leadership", "records-per-minute", "log-bytes"]
    scales = js(b, "return window.metalogReport.charts.map(c => [c.u.scales.x.min, c.u.scales.x.max])")
    assert len({tuple(s) for s in scales}) == 1  # one time axis with the cluster's other charts
    assert js(b, "return chart('log-bytes').group === chart('phases').group") is True


def test_the_leadership_lane_shows_each_epoch_and_its_controller(b: Chromium,
                                                                 analysed: tuple[Path, ClusterGrowth]) -> None:
    growth = analysed[1]
    assert [g.leader for g in growth.leadership] == [3000, *LEADERS]
    for row in growth.leadership[1:]:
        t = row.timestamp + 30 * MINUTE_MS  # the middle of the epoch's hour
        readout = js(b, f"""const ch = chart('controller-leadership'), u = ch.u;
            u.setCursor({{left: u.valToPos({t}, "x"), top: 5}});
            return u.root.closest('figure').querySelector('.readout').textContent""")
        assert f"controller leader: controller {row.leader}, epoch {row.epoch}" in readout
    colors = js(b, "return chart('controller-leadership').lanes[0].colors")
    codes = js(b, "return chart('controller-leadership').lanes[0].codes")
    by_code = dict(zip(codes, colors, strict=True))
    assert by_code["controller 3, epoch 3"] == by_code["controller 3, epoch 5"] != by_code["controller 2, epoch 2"]


def test_records_per_minute_and_bytes_are_the_tables(b: Chromium, analysed: tuple[Path, ClusterGrowth]) -> None:
    growth = analysed[1]
    last = growth.leadership[-1]  # controller 3: four NoOpRecords a minute for an hour
    t = last.timestamp + 30 * MINUTE_MS + 1000
    js(b, f"window.metalogReport.groups.get('c0').zoom({t - 600_000}, {t + 600_000})")
    b.eval("window.metalogReport.drawAll()")
    noops = js(b, f"""const ch = chart('records-per-minute'), i = ch.series.findIndex(s => s.label === 'NoOpRecord');
        const k = Math.floor(({t} - ch.buckets.a) / ch.buckets.w); return [ch.env[i].lo[k], ch.env[i].hi[k]]""")
    assert noops == [4, 4]
    logged = js(b, f"""const ch = chart('log-bytes'), k = Math.floor(({t} - ch.buckets.a) / ch.buckets.w);
        return [ch.env[0].hi[k], ch.series[0].label]""")
    before = [m.log_bytes for m in growth.log_size if m.minute + MINUTE_MS <= t]  # the minutes ended by t
    assert logged == [before[-1], "log (from its start offset)"]  # (in bytes: the log is under 40 MB)


def test_each_snapshot_is_marked_on_the_bytes_chart(b: Chromium, analysed: tuple[Path, ClusterGrowth]) -> None:
    growth = analysed[1]
    js(b, "const g = window.metalogReport.groups.get('c0'); g.zoom(g.full[0], g.full[1])")
    b.eval("window.metalogReport.drawAll()")
    assert len(growth.snapshots) >= 3
    assert js(b, "return chart('log-bytes').u.notesDrawn") == len(growth.snapshots)
    assert js(b, "return chart('records-per-minute').u.notesDrawn") == js(b, "return chart('phases').u.notesDrawn")
    latest = max(growth.snapshots, key=lambda s: s.timestamp)
    readout = js(b, f"""const u = chart('log-bytes').u; u.setCursor({{left: u.valToPos({latest.timestamp}, "x"),
        top: 5}}); return u.root.closest('figure').querySelector('.readout').textContent""")
    assert "▲ snapshot at" in readout and f"snapshot {latest.file}: end offset {latest.end_offset:,}" in readout
