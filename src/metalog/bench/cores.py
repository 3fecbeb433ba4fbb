"""The log core's pure twins on demand, to time them beside the compiled ones in one run: the twins the log and
state layers register (``metalog.codec.core.register_twin``), switched through that registry."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import metalog.log.reader
import metalog.log.scan
import metalog.log.tee
import metalog.state.loader  # noqa: F401  (with the three above: every twin of the log core is registered)
from metalog.codec import core


@contextmanager
def pure_log_core() -> Iterator[None]:
    """The pure twins of the log core run in this process for the duration (the compiled codec readers stay)."""
    with core.pure_twins("log"):
        yield


def compiled_log_core() -> bool:
    """Whether every compiled twin of the log core runs (so a pure run beside it compares two different things)."""
    return core.twins_active("log")


def log_status() -> str:
    """One line: which log core runs, e.g. ``compiled (Cython 3.0.11)``, ``pure Python (METALOG_PURE=1)`` or
    ``compiled (Cython 3.0.11); pure for scan (not built)`` (``metalog --version``, ``metalog bench``)."""
    return core.twin_status("log")
