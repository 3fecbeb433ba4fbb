"""What py4j and pyspark print, from their loggers and threads, when Ctrl-C stops a Spark session: the session
says ``metalog: interrupted`` in one line instead. Ctrl-C reaches the driver's JVM as well (it runs in the
terminal's process group), so an interrupt is also a JVM that went away mid-call."""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _FromPy4j(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "py4j" not in record.pathname


@contextmanager
def quiet_py4j() -> Iterator[None]:
    """py4j logs tracebacks when Ctrl-C interrupts a call into the JVM, or the JVM went away. Two ways out are
    closed: what py4j logs on the root logger itself (``logging.exception``, which also gives the root a stderr
    handler), caught by a filter there; and what its own loggers log (``py4j.clientserver`` shutting a socket
    down), which reaches the root's handlers past the root's filters, held back by the ``py4j`` logger's
    level."""
    root, py4j = logging.getLogger(), logging.getLogger("py4j")
    quiet, level = _FromPy4j(), py4j.level
    root.addFilter(quiet)
    py4j.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        py4j.setLevel(level)
        root.removeFilter(quiet)


class AccumulatorErrors:
    """pyspark's accumulator server (a socketserver thread the JVM reports to) prints a traceback when its
    connection breaks, as it does when Ctrl-C stops the JVM: its errors are held (``handle_error``) until the
    session ends, then dropped if Ctrl-C ended it (with any that follow), else printed as the server would
    have, and later ones as they come."""

    def __init__(self, server: Any) -> None:
        self.held: list[str] = []
        self.interrupted: bool | None = None  # None: the session has not ended
        server.handle_error = self.handle_error

    def handle_error(self, request: Any, client_address: Any) -> None:
        if self.interrupted:
            return
        self.held.append(_as_socketserver_says(client_address))
        if self.interrupted is False:
            self._say()

    def settle(self, *, interrupted: bool) -> None:
        self.interrupted = interrupted
        if interrupted:
            self.held.clear()
        else:
            self._say()

    def _say(self) -> None:
        while self.held:
            print(self.held.pop(0), end="", file=sys.stderr)


def _as_socketserver_says(client_address: Any) -> str:
    """The text ``socketserver.BaseServer.handle_error`` prints for the exception being handled."""
    return ("-" * 40 + "\n" + f"Exception occurred during processing of request from {client_address}\n"
            + traceback.format_exc() + "-" * 40 + "\n")
