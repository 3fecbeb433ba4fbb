"""A progress bar on stderr for long work; silent when stderr is not a terminal (pipes, CI, tests)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``update(done, total)`` redraws at most ten times a second; ``close()`` ends the line."""

    def __init__(self, label: str, *, unit: str = "records", stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False

    def update(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last_draw < 0.1:
            return
        self.last_draw = now
        rate = done / max(now - self.start, 1e-9)
        if total:
            frac = min(done / total, 1.0)
            bar = "#" * int(frac * 30)
            text = f"{self.label} [{bar:<30}] {frac:6.1%} {done:,}/{total:,} {self.unit} ({rate:,.0f}/s)"
        else:
            text = f"{self.label} {done:,} {self.unit} ({rate:,.0f}/s)"
        self.stream.write("\r" + text[:120].ljust(80))
        self.stream.flush()
        self.drawn = True

    def restart(self) -> None:
        """A new stage: its rate counts from now."""
        self.start = time.monotonic()
        self.last_draw = 0.0

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
