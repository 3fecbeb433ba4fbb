#!/usr/bin/env bash
# Sets up .venv (if needed) with metalog and its test dependencies, building the compiled codec readers where
# a C compiler is present, then runs the linters and the suite twice: on the codec core as installed (the
# compiled readers where they were built), then again on the pure Python core (METALOG_PURE=1), without the
# tests marked spark or slow (they exercise the JVM and the analysis engines more than the codec).
# Usage: bash scripts/test.sh [pytest args...]
#   METALOG_TEST_CORES=installed  only the first run; METALOG_TEST_CORES=pure  only the second
#   METALOG_REQUIRE_COMPILED=1    the first run fails unless the compiled readers loaded (CI sets it)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
.venv/bin/ruff check src tests benchmarks setup.py
cores=${METALOG_TEST_CORES:-both}
status=0
if [ "$cores" != pure ]; then
  echo "== the suite on the codec core as installed: $(.venv/bin/python -c 'from metalog.codec import core; print(core.status())') =="
  .venv/bin/python -m pytest "$@" || status=$?
fi
if [ "$cores" != installed ]; then
  echo "== the suite on the pure Python codec core (METALOG_PURE=1), without the spark and slow tests =="
  METALOG_PURE=1 METALOG_REQUIRE_COMPILED=0 .venv/bin/python -m pytest -m "not spark and not slow" \
    --ignore=tests/analysis/test_spark.py --ignore=tests/cli/test_spark_submit.py "$@" || status=$?
fi
exit "$status"
