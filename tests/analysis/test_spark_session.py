"""The Spark session's handling of py4j's logging, without a JVM: Ctrl-C during a call into the JVM makes py4j
log tracebacks two ways, and neither may reach the person (``metalog: interrupted`` is the one line)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from metalog.analysis.spark_session import quiet_py4j


@pytest.fixture
def stderr() -> Iterator[io.StringIO]:
    """A handler on the root logger, as py4j's module-level ``logging.exception`` installs one; and logging as a
    process starts, whatever a Spark session that other tests keep open in this process has quieted."""
    root, py4j = logging.getLogger(), logging.getLogger("py4j")
    filters, level = root.filters[:], py4j.level
    root.filters.clear()
    py4j.setLevel(logging.NOTSET)
    text = io.StringIO()
    handler = logging.StreamHandler(text)
    root.addHandler(handler)
    try:
        yield text
    finally:
        root.removeHandler(handler)
        root.filters[:] = filters
        py4j.setLevel(level)


def from_py4j_module(message: str) -> logging.LogRecord:
    """A record as ``logging.exception(...)`` called in py4j's java_gateway.py makes it: on the root logger."""
    return logging.LogRecord("root", logging.ERROR, "/venv/site-packages/py4j/java_gateway.py", 1070, message,
                             None, None)


def test_neither_way_py4j_logs_reaches_the_handlers_while_quiet(stderr: io.StringIO) -> None:
    with quiet_py4j():
        logging.getLogger().handle(from_py4j_module("KeyboardInterrupt while sending command."))
        logging.getLogger("py4j.clientserver").error("Exception occurred while shutting down connection")
        logging.getLogger("py4j.java_gateway").error("Error while sending or receiving.")
    assert stderr.getvalue() == ""


def test_the_rest_is_logged_while_quiet_and_py4j_again_after(stderr: io.StringIO) -> None:
    with quiet_py4j():
        logging.getLogger("metalog").error("ours")
    logging.getLogger().handle(from_py4j_module("after, from the module"))
    logging.getLogger("py4j.clientserver").error("after, from its logger")
    assert stderr.getvalue().splitlines() == ["ours", "after, from the module", "after, from its logger"]
    assert logging.getLogger("py4j").level == logging.NOTSET


def test_a_quiet_inside_another_leaves_the_outer_one_quiet(stderr: io.StringIO) -> None:
    with quiet_py4j():
        with quiet_py4j():
            pass
        logging.getLogger().handle(from_py4j_module("from the module"))
        logging.getLogger("py4j.clientserver").error("from its logger")
    assert stderr.getvalue() == ""
