"""Which log core runs (the compiled twins of the log's hot paths, each registered by its own layer in codec/core.py's
registry): said out loud by ``metalog --version`` and ``metalog bench``, forced pure by METALOG_PURE=1, a twin not
built named."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from metalog.bench import cores
from metalog.codec import core

PROBE = """
from metalog.bench import cores
from metalog.log import batch, reader, scan
from metalog.state import MetadataLoader, loader
print(cores.log_status())
print(*(t.compiled is None for t in (batch.DECODE_RECORDS, reader.NEXT_BATCHES, scan.SCAN_INTO, loader.VALUE_REPLAY)),
      type(MetadataLoader().replay_value).__name__)
"""


def run(script: str, **env: str) -> str:
    """stdout and stderr of ``script`` in a Python of its own (the core is chosen at import)."""
    base = {k: v for k, v in os.environ.items() if k not in (core.PURE_ENV, "METALOG_REQUIRE_COMPILED")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env={**base, **env},
                         check=False)
    assert out.returncode == 0, out.stderr
    return (out.stdout + out.stderr).strip()


def test_metalog_pure_forces_the_pure_log_core() -> None:
    status, twins = run(PROBE, METALOG_PURE="1").splitlines()
    assert status == "pure Python (METALOG_PURE=1)"
    assert twins == "True True True True method"


def test_version_names_both_cores() -> None:
    out = run("from metalog.cli.main import main; main(['--version'])", METALOG_PURE="1").splitlines()
    assert out[1:] == ["codec: pure Python (METALOG_PURE=1)", "log: pure Python (METALOG_PURE=1)",
                       "analysis: pure Python (METALOG_PURE=1)"]


@pytest.mark.skipif(not cores.compiled_log_core(), reason=f"log core: {cores.log_status()}")
def test_the_compiled_log_core_runs_everywhere_it_was_built() -> None:
    status, twins = run(PROBE).splitlines()
    assert status.startswith("compiled (Cython 3.") and "pure for" not in status
    assert twins == "False False False False ValueReplay"


@pytest.mark.skipif(not cores.compiled_log_core(), reason=f"log core: {cores.log_status()}")
def test_a_twin_not_built_stays_pure_and_status_names_it() -> None:
    script = """
import sys
class NotBuilt:
    def find_spec(self, name, path=None, target=None):
        if name == 'metalog.log.compiled.scan':
            raise ImportError('simulated')
sys.meta_path.insert(0, NotBuilt())
""" + PROBE
    status, twins = run(script).splitlines()
    assert status.startswith("compiled (Cython 3.") and status.endswith("; pure for scan (not built)"), status
    assert twins == "False False True False ValueReplay"
