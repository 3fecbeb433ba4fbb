"""What py4j and pyspark print when Ctrl-C stops a Spark session, without a JVM: py4j logs tracebacks two ways
and neither may reach the person while the session is quiet; pyspark's accumulator server prints one from its
thread, held until the session ends, then dropped after Ctrl-C and printed as the server would otherwise."""

from __future__ import annotations

import io
import logging
import socket
import socketserver
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from metalog.analysis.engines.spark_quiet import AccumulatorErrors, quiet_py4j


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


class FakeServer:
    """What AccumulatorErrors takes over from pyspark's server: its ``handle_error``."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        raise AssertionError("replaced")


def fail_in(errors: AccumulatorErrors, message: str) -> None:
    """An error inside a request, handled as socketserver handles one: ``handle_error`` in its except clause."""
    try:
        raise EOFError(message)
    except EOFError:
        errors.handle_error(None, ("127.0.0.1", 4242))


def as_the_server_prints(message: str) -> str:
    """What socketserver's own handle_error prints for the same error."""
    text = io.StringIO()
    stderr, sys.stderr = sys.stderr, text
    try:
        try:
            raise EOFError(message)
        except EOFError:
            socketserver.BaseServer.handle_error(None, None, ("127.0.0.1", 4242))  # type: ignore[arg-type]
    finally:
        sys.stderr = stderr
    return text.getvalue()


def traceback_free(text: str) -> list[str]:
    """The lines that do not depend on where the error was raised."""
    return [line for line in text.splitlines() if not line.startswith(" ")]


def test_after_ctrl_c_the_servers_errors_are_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    errors = AccumulatorErrors(FakeServer())
    fail_in(errors, "while the JVM stops")
    assert capsys.readouterr().err == ""  # held
    errors.settle(interrupted=True)
    fail_in(errors, "as the JVM is killed")
    assert capsys.readouterr().err == ""


def test_otherwise_they_are_printed_as_the_server_would(capsys: pytest.CaptureFixture[str]) -> None:
    errors = AccumulatorErrors(FakeServer())
    fail_in(errors, "first")
    assert capsys.readouterr().err == ""
    errors.settle(interrupted=False)
    assert traceback_free(capsys.readouterr().err) == traceback_free(as_the_server_prints("first"))
    fail_in(errors, "later")  # after the session, as they come
    assert traceback_free(capsys.readouterr().err) == traceback_free(as_the_server_prints("later"))


class Failing(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        if not self.rfile.read(4):
            raise EOFError("the JVM went away")


def test_a_real_server_hands_its_errors_over() -> None:
    server = socketserver.TCPServer(("127.0.0.1", 0), Failing)
    errors = AccumulatorErrors(server)
    thread = threading.Thread(target=server.handle_request)
    thread.start()
    socket.create_connection(("127.0.0.1", server.server_address[1])).close()
    thread.join(10)
    server.server_close()
    assert len(errors.held) == 1
    assert "EOFError: the JVM went away" in errors.held[0]
