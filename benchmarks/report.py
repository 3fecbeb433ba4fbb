"""metalog analyze's report on a big log: how long writing it takes, its size, and in headless Chromium how
long it takes to open and how long a zoom or a pan takes (the linked charts on screen recomputed and redrawn).

    python benchmarks/report.py                         # the 5M-record log of benchmarks/analyze.py
    python benchmarks/report.py --records 500000        # quicker
    python benchmarks/report.py --html some/report.html # only the browser part, on a report already written

Needs chromium on PATH (driven with tests/analysis/chromium.py). Times are wall-clock; the load average is
printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from analyze import build  # noqa: E402  (benchmarks/analyze.py: the same generated log)

from metalog.analysis.engines.python import PythonEngine  # noqa: E402
from metalog.analysis.engines.request import AnalysisRequest  # noqa: E402
from metalog.analysis.report import write_report_from_tables  # noqa: E402
from tests.analysis.chromium import Chromium  # noqa: E402

READY = "document.documentElement.dataset.report === 'ready'"


def browse(page: Path, rounds: int) -> dict[str, float]:
    """Open ``page`` ``rounds`` times (best load), then time zooms and pans of the first group."""
    with tempfile.TemporaryDirectory() as profile, Chromium(Path(profile), width=1400, height=1000,
                                                            timeout=600) as b:
        loads = []
        for _ in range(rounds):
            start = time.perf_counter()
            b.open(page.resolve().as_uri(), READY)
            loads.append(time.perf_counter() - start)
        in_page = b.eval("performance.now()")  # the last load, measured by the page (navigation to now)
        charts = b.eval("window.metalogReport.charts.length")
        zoom = b.eval("""(() => {
            const g = [...window.metalogReport.groups.values()][0], [a, b] = g.full, out = [];
            for (let i = 1; i <= 10; i++) {  // zoom in step by step around a third of the way, then pan
                const span = (b - a) / Math.pow(2, i), mid = a + (b - a) / 3, t = performance.now();
                g.zoom(mid - span / 2, mid + span / 2); out.push(performance.now() - t);
            }
            const pans = [];
            for (let i = 0; i < 10; i++) {
                const t = performance.now(), s = g.max - g.min;
                g.zoom(g.min + s / 3, g.max + s / 3); pans.push(performance.now() - t);
            }
            const t = performance.now(); g.zoom(a, b); const whole = performance.now() - t;
            return [out, pans, whole];
        })()""")
        problems = b.problems()
    if problems:
        print("page problems:", problems)
    return {"load_s": min(loads), "load_in_page_ms": in_page, "charts": charts,
            "zoom_ms": statistics.median(zoom[0]), "zoom_max_ms": max(zoom[0]), "pan_ms": statistics.median(zoom[1]),
            "whole_ms": zoom[2]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--html", type=Path, help="a report.html already written: only open, zoom and pan it")
    ap.add_argument("--rounds", type=int, default=3, help="page loads (the best is shown)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    page = args.html
    if page is None:
        path = build(args.records, args.seed)
        out = Path(tempfile.gettempdir()) / f"metalog-bench-report-{args.records}-{args.seed}"
        t = time.perf_counter()
        summary = PythonEngine().analyze(AnalysisRequest.of([path], out))
        analysis = time.perf_counter() - t
        t = time.perf_counter()
        write_report_from_tables(out, list(summary.clusters))
        written = time.perf_counter() - t
        page = out / "report.html"
        print(f"{summary.batches:,} batches; analysis {analysis:.1f} s, report.html and report.png written in "
              f"{written:.1f} s", flush=True)
    size = page.stat().st_size
    m = browse(page, args.rounds)
    print(f"report.html {size / 1e6:.1f} MB, {m['charts']} charts")
    print(f"open (navigation to every chart drawn): {m['load_s']:.2f} s ({m['load_in_page_ms']:.0f} ms in the page)")
    print(f"zoom: median {m['zoom_ms']:.1f} ms (slowest {m['zoom_max_ms']:.1f} ms); pan: median {m['pan_ms']:.1f} ms; "
          f"back to the whole range: {m['whole_ms']:.1f} ms (the charts on screen recomputed and redrawn; the others "
          "when they scroll into view)")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
