#!/usr/bin/env bash
# Sets up .venv (if needed) with metalog and its test dependencies, building the compiled codec readers and the
# compiled log core where a C compiler is present, then runs the linters (ruff; lint-imports, the layers' import
# contracts in pyproject.toml; mypy, the type check of src/metalog configured there) and the suite twice: on the
# cores as installed (the compiled readers and log core where they were built), then again on the pure Python
# cores (METALOG_PURE=1), without the tests marked spark or slow (they exercise the JVM and the analysis engines
# more than the codec).
# Usage: bash scripts/test.sh [--quick] [pytest args...]
#   (no option)  everything: what CI runs
#   --quick      the inner loop: the linters and every test not marked spark or slow, on the installed core only,
#                with pytest --quick (tests/quick.py: a subset of the largest parametrised tests, a quarter of the
#                Hypothesis examples); about 95 s of CPU, under a minute on 2 quiet cores
#   METALOG_TEST_CORES=installed  only the first run; METALOG_TEST_CORES=pure  only the second
#   METALOG_REQUIRE_COMPILED=1    the first run fails unless the compiled readers and log core loaded (CI sets it)
# The tests run in one process per core (pytest-xdist), a test file's tests in one process, so the Spark tests
# share one session; -n 0 runs them in this process. pip runs again only when what the install builds from has
# changed since the last install (pyproject.toml, setup.py, the compiled readers' sources; metalog is installed
# editable, so Python sources need no reinstall).
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
cores=${METALOG_TEST_CORES:-both}
if [ "${1:-}" = "--quick" ]; then
  shift
  select=(-m "not spark and not slow" --quick)
  cores=${METALOG_TEST_CORES:-installed}
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.metalog-test-install
wanted=$(find pyproject.toml setup.py src/metalog/codec/compiled src/metalog/log/compiled src/metalog/state/compiled \
           src/metalog/analysis/domain/compiled src/metalog/analysis/outputs/compiled -type f \
           \( -name pyproject.toml -o -name setup.py -o -name '*.pyx' -o -name '*.pxd' -o -name '*.h' \) \
           -print0 | sort -z | xargs -0 cat | sha256sum)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
  echo "$wanted" >"$stamp"
fi
# bytecode for every Python process of the run (pytest's rewritten test modules, metalog's modules, each CLI a test
# starts), cached under .venv: compiling them from source every time (PYTHONDONTWRITEBYTECODE) cost about 3 s of
# CPU per pytest process and a third of each CLI's start; the source tree stays free of __pycache__ either way
export PYTHONPYCACHEPREFIX="$PWD/.venv/pycache"
unset PYTHONDONTWRITEBYTECODE
.venv/bin/ruff check src codegen tests benchmarks scripts setup.py
# the layers' contracts: one line when they are kept, import-linter's whole report when one is broken
contracts=$(.venv/bin/lint-imports --no-cache) || { echo "$contracts"; exit 1; }
echo "lint-imports: ${contracts##*$'\n'}"
# the type check: one line when clean (its cache, .mypy_cache, makes a rerun after a small change a few seconds)
.venv/bin/mypy
status=0
if [ "$cores" != pure ]; then
  echo "== the suite on the cores as installed: $(.venv/bin/python -c 'from metalog.codec import core
from metalog.analysis.domain import twins
from metalog.bench.cores import log_status
print(f"codec {core.status()}, log {log_status()}, analysis {twins.status()}")') =="
  .venv/bin/python -m pytest -n auto --dist loadfile ${select[@]+"${select[@]}"} "$@" || status=$?
fi
if [ "$cores" != installed ]; then
  echo "== the suite on the pure Python cores (METALOG_PURE=1), without the spark and slow tests =="
  METALOG_PURE=1 METALOG_REQUIRE_COMPILED=0 .venv/bin/python -m pytest -n auto --dist loadfile \
    -m "not spark and not slow" "$@" || status=$?
fi
exit "$status"
