#!/usr/bin/env bash
# Sets up .venv (if needed) with metalog and its test dependencies, then runs the linters and the tests.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/ruff check src tests benchmarks
.venv/bin/python -m pytest "$@"
