"""The pure twins of the log core's hot paths on demand, to time them beside the compiled ones in one run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from metalog.codec import core
from metalog.log import batch, reader, scan
from metalog.state import loader

# (module, the name of its compiled twin's function there): what runs when it is not None
_SWITCHES = [(batch, "compiled_decode_records"), (batch, "compiled_next_batches"), (reader, "compiled_next_batches"),
             (scan, "compiled_scan_into"), (loader, "compiled_value_replay")]


@contextmanager
def pure_log_core() -> Iterator[None]:
    """The pure twins of the log core run in this process for the duration (the compiled codec readers stay)."""
    saved = [(module, name, getattr(module, name)) for module, name in _SWITCHES]
    for module, name, _ in saved:
        setattr(module, name, None)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def compiled_log_core() -> bool:
    """Whether the compiled log core runs (so a pure run beside it compares two different things)."""
    return core.log_compiled_active()
