#!/usr/bin/env bash
# Sets up .venv (if needed) with metalog, pyspark, pyarrow and Pillow, then runs the demo end to end: a generated
# cluster history, its state at a few points in time, what changed, and the migration-phase analysis on Spark
# (report.html, report.png, CSV timelines). Needs Python 3.11+ and, for Spark, a JDK 17 or 21 (without one the
# demo says so and analyses on the python engine). Usage: bash scripts/demo.sh [metalog demo args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[spark,analysis]'
exec .venv/bin/metalog demo "$@"
