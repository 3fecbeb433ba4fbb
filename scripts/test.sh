#!/usr/bin/env bash
# Sets up .venv (if needed) with metalog and its test dependencies, then runs the linters and the tests.
# Usage: bash scripts/test.sh [--quick] [pytest args...]
#   (no option)  everything: what CI runs
#   --quick      the inner loop: ruff and every test not marked spark or slow (under a minute on 2 cores)
# The tests run in one process per core (pytest-xdist), a test file's tests in one process, so the Spark tests
# share one session; -n 0 runs them in this process. pip runs again only when pyproject.toml has changed since
# the last install (metalog is installed editable).
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
if [ "${1:-}" = "--quick" ]; then
  shift
  select=(-m "not spark and not slow")
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.metalog-test-install
wanted=$(.venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest())')
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
  echo "$wanted" >"$stamp"
fi
.venv/bin/ruff check src tests benchmarks
.venv/bin/python -m pytest -n auto --dist loadfile ${select[@]+"${select[@]}"} "$@"
