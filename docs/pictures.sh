#!/usr/bin/env bash
# Redraws the README's pictures of the report from a generated mixed history: docs/report.png (report.html as
# headless Chromium shows it) and docs/report-main-chart.png (the analysis' own report.png).
# Needs .venv (bash scripts/demo.sh makes it) and chromium on PATH. Usage: bash docs/pictures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/metalog generate "$work/mixed" --scenario mixed --seed 7 --records 20000 > /dev/null
.venv/bin/metalog analyze "$work/mixed" --out "$work/analysis" --engine python > /dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1000,1240 --screenshot="$work/shot.png" "file://$work/analysis/report.html" 2> /dev/null
cp "$work/shot.png" docs/report.png
cp "$work/analysis/report.png" docs/report-main-chart.png
echo "docs/report.png docs/report-main-chart.png"
