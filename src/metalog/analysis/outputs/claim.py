"""An analysis run's hold on its output directory: claimed (``tables.claim_output``), and marked ``INCOMPLETE``
for as long as the run has not ended well.

The marker is written as the run claims the directory, before any table, and removed only when the run ends
well. A run that fails (damage in a log, a full disk, Spark's error), is interrupted, or is killed leaves it:
its text says when the run started and, where the run saw its end, why it failed. So an operator who finds the
tables of a failed run (written so far, beside an earlier run's tables not yet replaced) also finds that they
are partial, and why; the next run that ends well removes it. Only ever this one file is written or removed
here, in the directory the analysis claimed."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from metalog.analysis.outputs.tables import claim_output
from metalog.errors import MetalogError
from metalog.text import escape

INCOMPLETE = "INCOMPLETE"  # in an output directory whose last analysis has not ended well

_PARTIAL = ("The tables, controller_metrics.om and report in this directory are partial: those this run wrote "
            "before it stopped, beside an earlier run's. The next metalog analyze with this --out that ends well "
            "replaces them and removes this file.\n")


@contextmanager
def claimed_output(out: Path) -> Iterator[None]:
    """``claim_output(out)``, with ``INCOMPLETE`` in it until the block ends well (then removed); an exception
    out of the block writes why into it, and goes on."""
    claim_output(out)
    marker = out / INCOMPLETE
    started = _now()
    marker.write_text(f"metalog analyze started here at {started} (process {os.getpid()}) and has not finished.\n"
                      + _PARTIAL)
    try:
        yield
    except BaseException as e:
        marker.write_text(f"metalog analyze started here at {started} failed at {_now()}: {why(e)}\n" + _PARTIAL)
        raise
    marker.unlink()


def why(e: BaseException) -> str:
    """The one line the command line prints for ``e`` (``metalog.cli.main``), escaped as it is there."""
    if isinstance(e, KeyboardInterrupt):
        return "interrupted"
    if isinstance(e, MetalogError):
        return escape(str(e))
    if isinstance(e, OSError) and e.strerror:
        return escape(e.strerror + (f": {e.filename}" if e.filename else ""))
    return escape(f"{type(e).__name__}: {e}")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
