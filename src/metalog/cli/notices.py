"""The one place where the CLI tells a person about damage: ``metalog: error: ...`` and ``metalog: notice:
...`` lines on stderr, each one line (a name or a path in them escaped: ``metalog.text.escape``). The library
never prints; what opening a log cut or left out is in its ``MetadataLog.recovery``, and every verb shows it
here, once per line however often the log is opened.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from metalog.text import escape


def error(e: object) -> None:
    print(f"metalog: error: {escape(str(e))}", file=sys.stderr)


def notice(text: str) -> None:
    print(f"metalog: notice: {escape(text)}", file=sys.stderr)


def warning(text: str) -> None:
    print(f"metalog: warning: {text}", file=sys.stderr)


@contextmanager
def recovery_notices() -> Iterator[None]:
    """While a verb runs: one line for each torn tail an open cut or left out (and what a repair lost)."""
    from metalog.log.recovery import watch_recovery

    told: set[str] = set()

    def tell(report: Any) -> None:
        for line in report.damage_lines():
            if line not in told:
                told.add(line)
                notice(line)

    with watch_recovery(tell):
        yield
