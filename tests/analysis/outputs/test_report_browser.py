"""report.html in headless Chromium (driven over the DevTools protocol, tests/analysis/chromium.py): it loads
offline without a console error, a one-batch spike in a long log is drawn at the default zoom and zoomed in,
hover shows values and event details, a drag zooms every linked chart, events are drawn, the fleet table sorts
and the events filter and fold. Skipped, saying why, without Chromium (CI installs it: .ci/run)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.outputs.report.series import Steps, envelope
from tests.analysis import crafted as c
from tests.analysis.chromium import BINARY, Chromium
from tests.analysis.oracle import analyze_python, write_report
from tests.analysis.test_timeline import jbod_transition, zk_migration

pytestmark = [pytest.mark.slow,  # a browser of its own
              pytest.mark.skipif(BINARY is None, reason="no chromium on PATH (apt-get install -y chromium) to run "
                                                        "the report's page")]

SPIKE_AT, BATCHES = 12_345, 20_000  # broker 2 fenced for one batch of 20,000 (a second of 5.5 hours)
SPIKE_TIME = c.T0 + SPIKE_AT * 1000
READY = "window.metalogReport && window.metalogReport.ready"


def spike_log(root: Path) -> Path:
    """Three brokers, three partitions on all of them; then NoOp batches, one a second, and in one of them
    broker 2 is fenced, unfenced in the next: three offline replicas for one batch."""
    steps = [[c.feature(17), *(c.broker(b, b * 10) for b in (1, 2, 3)), *(c.unfence(b, b * 10) for b in (1, 2, 3)),
              *c.topic(1, [[1, 2, 3], [2, 3, 1], [3, 1, 2]])]]
    for i in range(1, BATCHES):
        if i == SPIKE_AT:
            steps.append([c.rec("BrokerRegistrationChangeRecord", broker_id=2, broker_epoch=20, fenced=1)])
        elif i == SPIKE_AT + 1:
            steps.append([c.unfence(2, 20)])
        else:
            steps.append([c.rec("NoOpRecord")])
    return c.write(root, steps)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("report")
    result = analyze_python([spike_log(root / "spike"), zk_migration(root / "zk"), jbod_transition(root / "jbod")])
    write_report(root, result.rows, result.events, result.by_broker)
    return (root / "report.html").as_uri()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    with Chromium(tmp_path_factory.mktemp("profile"), width=1280, height=1000) as b:
        yield b


@pytest.fixture
def b(browser: Chromium, page: str) -> Chromium:
    browser.open(page, READY)
    return browser


def js(b: Chromium, body: str) -> Any:
    """``body`` run with ``chart(cluster, name)`` at hand; its JSON result."""
    return json.loads(b.eval(f"""(() => {{
        const R = window.metalogReport;
        const chart = (cluster, name) => R.charts.find(c => c.cluster === cluster && c.name === name);
        return JSON.stringify((() => {{ {body} }})() ?? null);
    }})()"""))


def place(b: Chromium, cluster: str, name: str, t: float) -> tuple[float, float, float]:
    """Scroll a chart into view and wait until it is drawn for the current range (a chart off screen is drawn
    when it comes into view); the x of time ``t`` on it, and its plot's top and bottom (viewport CSS pixels)."""
    js(b, f"chart({cluster!r}, {name!r}).u.root.scrollIntoView({{block: 'center'}})")
    b.wait_for(f"!window.metalogReport.charts.find(c => c.cluster === {cluster!r} && c.name === {name!r}).stale")
    return tuple(js(b, f"""const u = chart({cluster!r}, {name!r}).u, r = u.over.getBoundingClientRect();
        return [r.left + u.valToPos({t}, "x"), r.top, r.bottom];"""))  # type: ignore[return-value]


def spike_values(b: Chromium) -> dict[str, Any]:
    """For the spike cluster's offline chart: the highest value in the spike's pixel and in the whole range."""
    return js(b, f"""const ch = chart("spike", "offline"), k = Math.floor(({SPIKE_TIME} - ch.buckets.a) / ch.buckets.w);
        const hi = ch.env[0].hi;
        return {{atSpike: k >= 0 && k < hi.length ? hi[k] : null, highest: Math.max(...hi.filter(x => x !== null)),
                 pixels: ch.buckets.n, range: [ch.u.scales.x.min, ch.u.scales.x.max]}};""")


def colored_above_zero(b: Chromium, cluster: str, name: str, t: float, color: str) -> int:
    """Pixels of ``color`` (within a little anti-aliasing) in the column of time ``t``, above the zero line."""
    return js(b, f"""const u = chart({cluster!r}, {name!r}).u, px = devicePixelRatio;
        const x = Math.round(u.valToPos({t}, "x", true)), zero = Math.round(u.valToPos(0, "y", true));
        const top = u.bbox.top, img = u.ctx.getImageData(x - 2 * px, top, 4 * px + 1, zero - top - 3 * px).data;
        const want = [{int(color[1:3], 16)}, {int(color[3:5], 16)}, {int(color[5:7], 16)}];
        let n = 0;
        for (let i = 0; i < img.length; i += 4)
            if (Math.abs(img[i] - want[0]) + Math.abs(img[i + 1] - want[1]) + Math.abs(img[i + 2] - want[2]) < 40) n++;
        return n;""")


def test_the_page_loads_offline_without_errors(b: Chromium, page: str) -> None:
    assert b.requests() == [page]  # nothing but the file itself: no script, style or font fetched
    b.eval("0")
    assert b.problems() == []
    groups = js(b, "return [...window.metalogReport.groups.values()].map(g => [g.name, g.charts.length])")
    # the clusters overlap in time: one group, one time axis; spike and zk 5 + 4 charts each (cluster, brokers),
    # jbod 5 + 4 + 2 (its log directories)
    assert groups == [["fleet", 29]]
    assert js(b, "return document.querySelector('.toolbar[data-group=fleet]').hidden") is False


def test_a_one_batch_spike_in_a_long_log_is_drawn_at_any_zoom(b: Chromium) -> None:
    """Each pixel of the default zoom covers about 18 batches; the spike is one. Drawn with each pixel's lowest
    and highest value, it shows: in the data drawn and in the canvas' pixels, then zoomed in around it."""
    whole = spike_values(b)
    assert whole["atSpike"] == 3 and whole["highest"] == 3 and BATCHES / whole["pixels"] > 10
    assert colored_above_zero(b, "spike", "offline", SPIKE_TIME, "#7570b3") > 20
    assert colored_above_zero(b, "spike", "offline", SPIKE_TIME - 3_000_000, "#7570b3") == 0  # elsewhere: nothing
    assert js(b, f"""const ch = chart("spike", "brokers"), k = Math.floor(({SPIKE_TIME} - ch.buckets.a) / ch.buckets.w);
        return [ch.env[1].hi[k], ch.env[1].lo[k], ch.env[0].lo[k], ch.env[0].hi[k]]""") == [1, 0, 2, 3]
    assert colored_above_zero(b, "spike", "broker-states", SPIKE_TIME, "#d7301f") > 5  # broker 2's lane: fenced
    x0, top, bottom = place(b, "spike", "offline", SPIKE_TIME - 120_000)
    x1, _, _ = place(b, "spike", "offline", SPIKE_TIME + 120_000)
    b.drag(x0, x1, (top + bottom) / 2)
    zoomed = spike_values(b)
    assert zoomed["atSpike"] == 3 and abs(zoomed["range"][1] - zoomed["range"][0] - 240_000) < 2_000
    assert colored_above_zero(b, "spike", "offline", SPIKE_TIME + 500, "#7570b3") > 20
    b.eval("document.querySelector('.toolbar[data-group=fleet] button').click()")  # Reset
    x0, top, bottom = place(b, "spike", "offline", SPIKE_TIME + 1_000_000)
    x1, _, _ = place(b, "spike", "offline", SPIKE_TIME + 3_000_000)
    b.drag(x0, x1, (top + bottom) / 2)
    assert spike_values(b)["highest"] == 0  # a range without the spike draws none: the checks above can fail


def test_zoom_changes_the_range_of_every_linked_chart(b: Chromium) -> None:
    """The charts on screen follow a drag at once; each of the others is redrawn for the new range when it
    comes into view."""
    x0, top, bottom = place(b, "jbod", "replicas", c.T0 + 2_000_000)
    x1, _, _ = place(b, "jbod", "replicas", c.T0 + 5_000_000)
    b.drag(x0, x1, (top + bottom) / 2)
    on_screen = js(b, "return window.metalogReport.charts.filter(ch => ch.visible).map(ch => [ch.u.scales.x.min, "
                      "ch.u.scales.x.max])")
    assert 2 <= len(on_screen) < 29 and len({tuple(r) for r in on_screen}) == 1
    names = js(b, "return window.metalogReport.charts.map(ch => [ch.cluster, ch.name])")
    ranges = []
    for cluster, name in names:  # scroll through the page: every chart shows the new range
        place(b, cluster, name, 0)
        scale = js(b, f"const u = chart({cluster!r}, {name!r}).u; return [u.scales.x.min, u.scales.x.max]")
        ranges.append(tuple(scale))
    assert len(ranges) == 29 and set(ranges) == {tuple(on_screen[0])}
    lo, hi = ranges[0]
    assert abs(lo - (c.T0 + 2_000_000)) < 20_000 and abs(hi - (c.T0 + 5_000_000)) < 20_000  # a pixel is 18 s
    assert "UTC (50 min)" in b.eval("document.querySelector('.toolbar .range').textContent")
    b.eval("[...document.querySelectorAll('.toolbar[data-group=fleet] button')].find(x => x.textContent === '▶')"
           ".click()")  # pan forward: a third of the range
    panned = js(b, "const g = window.metalogReport.groups.get('fleet'); return [g.min, g.max]")
    assert panned[0] == pytest.approx(lo + (hi - lo) / 3) and panned[1] == pytest.approx(hi + (hi - lo) / 3)
    assert js(b, "return chart('jbod', 'replicas').u.scales.x.min") == pytest.approx(panned[0])  # on screen
    lo, hi = panned
    x, top, bottom = place(b, "zk", "brokers", (lo + hi) / 2)
    for clicks in (1, 2):  # a double-click shows the whole range again
        b.mouse("mousePressed", x, (top + bottom) / 2, buttons=1, clickCount=clicks)
        b.mouse("mouseReleased", x, (top + bottom) / 2, buttons=1, clickCount=clicks)
    whole = js(b, "const g = window.metalogReport.groups.get('fleet'); return [g.min, g.max, g.full]")
    assert whole[:2] == whole[2]


def test_hover_shows_the_values_and_an_events_detail(b: Chromium) -> None:
    x, top, bottom = place(b, "spike", "offline", SPIKE_TIME)
    b.mouse("mouseMoved", x, (top + bottom) / 2)
    readout = b.eval("""(() => { const ch = window.metalogReport.charts.find(c => c.cluster === 'spike' &&
        c.name === 'offline'); return ch.u.root.closest('figure').querySelector('.readout').textContent; })()""")
    assert "offline replicas: 0 to 3" in readout and "UTC" in readout
    # every chart of the fleet follows the cursor: the brokers chart of the same cluster reads the same moment
    brokers = js(b, "return chart('spike', 'brokers').u.root.closest('figure').querySelector('.readout').textContent")
    assert "fenced: 0 to 1" in brokers
    t = c.T0 + 6000  # jbod's directory failure (offset 15), in the middle of jbod's eight seconds
    b.eval(f"window.metalogReport.groups.get('fleet').zoom({c.T0}, {c.T0 + 8000})")
    x, top, bottom = place(b, "jbod", "phases", t)
    b.mouse("mouseMoved", x, (top + bottom) / 2)
    note = js(b, "return chart('jbod', 'phases').u.root.closest('figure').querySelector('.readout').innerText")
    assert "▲ directory-failure at 2023-11-14 22:13:26: offset 15: broker 1 lost directory" in note


def test_events_are_drawn_on_every_chart_of_their_cluster(b: Chromium) -> None:
    b.eval("window.metalogReport.drawAll()")
    drawn = js(b, "return window.metalogReport.charts.filter(c => c.cluster === 'jbod').map(c => c.u.notesDrawn)")
    assert drawn == [5] * len(drawn) and len(drawn) == 11
    assert colored_above_zero(b, "jbod", "replicas", c.T0 + 6000, "#d7301f") > 3  # the directory failure's line
    assert js(b, "return chart('spike', 'offline').u.notesDrawn") == 1  # metadata.version set; the fence is no event


def test_the_pages_envelope_is_the_python_one(b: Chromium) -> None:
    """The page recomputes each pixel's lowest and highest value at every zoom; report.series.envelope is the
    same rule in Python (the PNG's, and the unit tests'): both agree on random step series and ranges."""
    rng = random.Random(5)
    for _ in range(30):
        times = sorted(rng.randrange(0, 1000) for _ in range(rng.randrange(1, 60)))
        values = [rng.randrange(-5, 50) for _ in times]
        start = rng.randrange(-100, 900)
        end = start + rng.randrange(1, 600)
        n, until = rng.randrange(1, 90), rng.randrange(0, 1100)
        page = js(b, f"const e = window.metalogReport.envelope({{t: {times}, v: {values}}}, {start}, {end}, {n}, "
                     f"{until}); return [e.lo, e.hi]")
        assert tuple(page) == tuple(list(x) for x in envelope(Steps(times, values), start, end, n, until))


def test_the_fleet_table_sorts(b: Chromium) -> None:
    order = "[...document.querySelectorAll('table.fleet tbody tr td:first-child')].map(td => td.textContent)"
    assert b.eval(order) == ["spike", "zk", "jbod"]
    click = ("[...document.querySelectorAll('table.fleet th button')].find(x => x.textContent === "
             "'offline replicas').click()")
    b.eval(click)
    assert b.eval(order) == ["spike", "zk", "jbod"]  # 0, 0, 1 (equals keep their order)
    b.eval(click)
    assert b.eval(order)[0] == "jbod"
    b.eval("[...document.querySelectorAll('table.fleet th button')].find(x => x.textContent === 'cluster').click()")
    assert b.eval(order) == ["jbod", "spike", "zk"]


def test_events_filter_by_kind_and_text_and_aborted_transactions_fold(b: Chromium) -> None:
    visible = ("[...document.querySelectorAll('table.events tr[data-kind]')].filter(r => !r.hidden)"
               ".map(r => r.dataset.kind)")
    assert "aborted-transaction" not in b.eval(visible)  # folded
    b.eval("document.querySelector('tbody.fold button').click()")
    assert b.eval(visible).count("aborted-transaction") == 1
    b.eval("document.querySelector('button.kind[data-kind=metadata-version]').click()")
    assert "metadata-version" not in b.eval(visible)
    b.eval("const f = document.querySelector('.text-filter'); f.value = 'lost directory';"
           "f.dispatchEvent(new Event('input'))")
    assert b.eval(visible) == ["directory-failure"]
    assert b.eval("document.querySelector('#events .shown').textContent").startswith("1 of ")
    b.eval("0")
    assert b.problems() == []
