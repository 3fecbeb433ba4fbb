#!/usr/bin/env bash
# Redraws the pictures of the report in README.md and docs/analysis.md from a generated mixed history:
# docs/report.png (the top of report.html: fleet overview and the cluster's charts) and docs/report-brokers.png
# (its per-broker and per-directory views) and docs/report-growth.png (its growth and controller leadership
# view, of the same history snapshotted and with four elections added), as headless Chromium draws them, and
# docs/report-main-chart.png (the analysis' own report.png). Needs .venv (bash scripts/test.sh makes it) and
# chromium on PATH; Chromium is driven with tests/analysis/chromium.py. Usage: bash docs/pictures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/metalog generate "$work/mixed" --scenario mixed --seed 7 --records 20000 > /dev/null
.venv/bin/metalog analyze "$work/mixed" --out "$work/analysis" --engine python > /dev/null 2>&1
# the growth view's picture: the same history snapshotted, then four elections, each with an hour of NoOpRecords
.venv/bin/metalog generate "$work/grown" --scenario mixed --seed 7 --records 20000 --snapshot-every 5000 > /dev/null
.venv/bin/python - "$work/grown" <<'PY'
import sys

from metalog.codec.messages import LeaderChangeMessage, NoOpRecord
from metalog.codec.messages import leader_change_message as lcm
from metalog.log import MetadataLog, Mode

with MetadataLog.open(sys.argv[1], Mode.WRITE) as log:
    at, epoch = max(b.max_timestamp for b in log.batches()), log.latest_epoch or 1
    for leader in (3001, 3002, 3000, 3002):
        epoch, at = epoch + 1, at + 60_000
        voters = [lcm.Voter(voter_id=v) for v in (3000, 3001, 3002)]
        log.append_control([(LeaderChangeMessage(version=0, leader_id=leader, voters=voters,
                                                 granting_voters=[lcm.Voter(voter_id=leader)]), 0)],
                           epoch=epoch, timestamp=at)
        for minute in range(60):
            at += 60_000
            log.append([(NoOpRecord(), 0)] * 4, epoch=epoch, timestamp=at)
PY
.venv/bin/metalog analyze "$work/grown" --out "$work/grown-analysis" --engine python > /dev/null 2>&1
.venv/bin/python - "$work" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, ".")
from tests.analysis.chromium import Chromium  # noqa: E402

work = Path(sys.argv[1])


def box(b: Chromium, first: str, last: str) -> tuple[float, float, float, float]:
    """From the top of the element ``first`` to the bottom of ``last`` (CSS selectors), the page's width."""
    top, bottom = b.eval(f"""(() => {{ const y = window.scrollY, a = document.querySelector({first!r}),
        z = document.querySelector({last!r}); return [a.getBoundingClientRect().top + y - 12,
        z.getBoundingClientRect().bottom + y + 12]; }})()""")
    return 0, top, 1280, bottom - top


with Chromium(work / "profile", width=1280, height=1000) as b:
    b.open((work / "analysis" / "report.html").as_uri(), "window.metalogReport && window.metalogReport.ready")
    b.eval("window.metalogReport.drawAll()")  # the charts off screen are drawn when they scroll into view
    b.screenshot(Path("docs/report.png"), clip=box(b, "header", "figure.chart[data-chart=sizes]"))
    b.screenshot(Path("docs/report-brokers.png"),
                 clip=box(b, ".cluster h3", "figure.chart[data-chart=directory-replicas]"))
    b.open((work / "grown-analysis" / "report.html").as_uri(), "window.metalogReport && window.metalogReport.ready")
    b.eval("window.metalogReport.drawAll()")
    b.screenshot(Path("docs/report-growth.png"), clip=box(b, "h3 + p.growth", "figure.chart[data-chart=log-bytes]"))
PY
cp "$work/analysis/report.png" docs/report-main-chart.png
echo "docs/report.png docs/report-brokers.png docs/report-growth.png docs/report-main-chart.png"
