"""Which codec core runs (codec/core.py): chosen once at import, said out loud, never a silent mix-up."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from metalog.codec import core, message_class
from metalog.codec.compiled import CompiledReaderWarning, disagreement


def run(script: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in (core.PURE_ENV, "METALOG_REQUIRE_COMPILED")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env={**base, **env},
                         check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_metalog_pure_forces_the_pure_readers() -> None:
    script = ("from metalog.codec import core, message_class\n"
              "cls = message_class('PartitionRecord')\n"
              "print(core.status(), core.compiled_active(), core.is_compiled(cls), cls.READERS[1].__module__)")
    assert run(script, METALOG_PURE="1") == \
        "pure Python (METALOG_PURE=1) False False metalog.codec.messages.partition_record"


def test_a_missing_extension_is_said_with_its_reason() -> None:
    """Where the compiled modules cannot be imported (not built), the pure readers run and status says why."""
    script = """
import sys
class NotBuilt:
    def find_spec(self, name, path=None, target=None):
        if name.startswith('metalog.codec.compiled.'):
            raise ImportError(f'no module named {name!r} (simulated)')
sys.meta_path.insert(0, NotBuilt())
from metalog.codec import core, message_class
cls = message_class('PartitionRecord')
print(core.status()); print(core.is_compiled(cls), cls.decode(cls(partition_id=2).encode(1), 1).partition_id)
"""
    status, rest = run(script).splitlines()
    assert status == "pure Python (extension not built: no module named 'metalog.codec.compiled._info' (simulated))"
    assert rest == "False 2"


@pytest.mark.skipif(not core.compiled_active(), reason=f"codec core: {core.status()}")
def test_one_message_module_not_built_stays_pure_and_status_names_it() -> None:
    script = """
import sys
class NotBuilt:
    def find_spec(self, name, path=None, target=None):
        if name == 'metalog.codec.compiled.voters_record':
            raise ImportError('simulated')
sys.meta_path.insert(0, NotBuilt())
from metalog.codec import core, message_class
print(core.status())
print(core.is_compiled(message_class('VotersRecord')), core.is_compiled(message_class('PartitionRecord')))
"""
    status, rest = run(script).splitlines()
    assert status.startswith("compiled (Cython 3.") and status.endswith("not built: voters_record"), status
    assert rest == "False True"


@pytest.mark.skipif(not core.compiled_active(), reason=f"codec core: {core.status()}")
def test_status_names_cython_and_every_message_reads_compiled() -> None:
    assert core.status().startswith("compiled (Cython 3.")
    assert core.load_all() == {}
    assert core.is_compiled(message_class("UpdateMetadataRequest"))


def test_a_compiled_reader_refusing_what_the_pure_one_reads_is_said_out_loud() -> None:
    """The compiled readers call disagreement() when they refused input the pure reader then read: a warning
    (the suite turns it into a failure), never a silent difference."""
    pure = core.pure_readers(message_class("PartitionRecord"))[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        disagreement(pure, b"\x00\x01\x02", 1)
    assert len(caught) == 1 and caught[0].category is CompiledReaderWarning
    assert "compiled read_PartitionRecord_v1 refused input the pure reader read (from byte 1 of 3: 0102" in \
        str(caught[0].message)
