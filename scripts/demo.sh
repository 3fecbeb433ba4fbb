#!/usr/bin/env bash
# Sets up .venv (if needed) with metalog, then runs the demo end to end: a generated cluster history,
# its state at a few points in time, and what changed. Usage: bash scripts/demo.sh [metalog demo args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
exec .venv/bin/metalog demo "$@"
