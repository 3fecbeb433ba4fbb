"""The Spark session's errors without a JVM: Ctrl-C reaches the JVM too, and the error of pyspark's cleanup on the
JVM that went away must not hide the interrupt (``metalog: interrupted`` is the one line, exit 130)."""

from __future__ import annotations

import os
import select
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.engines import spark_session
from metalog.analysis.engines.spark_session import jvm_notice, release_accumulators, spark_error, stop_context
from metalog.errors import MetalogError


def raised_while_handling(first: BaseException, then: Exception, *, explicit: bool = False) -> Exception:
    try:
        try:
            raise first
        except BaseException as e:
            if explicit:
                raise then from e
            raise then  # noqa: B904 - as pyspark's ``with SCCallSiteSync`` exit raises it
    except Exception as caught:  # noqa: BLE001
        return caught


def test_a_failure_of_the_cleanup_after_ctrl_c_is_the_interrupt() -> None:
    """Ctrl-C inside collectToPython; the ``with`` block's exit then calls the JVM, which has gone."""
    empty = RuntimeError("Answer from Java side is empty")
    assert isinstance(spark_error(raised_while_handling(KeyboardInterrupt(), empty)), KeyboardInterrupt)
    deeper = raised_while_handling(raised_while_handling(KeyboardInterrupt(), empty), ValueError("then this"),
                                   explicit=True)
    assert isinstance(spark_error(deeper), KeyboardInterrupt)


def test_a_failure_without_ctrl_c_is_one_line() -> None:
    failure = raised_while_handling(ValueError("first"), RuntimeError("Answer from Java side is empty"))
    said = spark_error(failure)
    assert isinstance(said, MetalogError)
    assert str(said) == "Spark failed: Answer from Java side is empty"


def test_a_chain_that_loops_ends() -> None:
    first, then = RuntimeError("a"), RuntimeError("b")
    first.__context__, then.__context__ = then, first
    assert isinstance(spark_error(first), MetalogError)


WORKER_FAILED = """\
An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/site-packages/pyspark/worker.py", line 2001, in main
    process()
  File "/src/metalog/analysis/engines/spark_tables.py", line 120, in replay_task
    check_spark_times(path, part.rows)
{raised}

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:624)
\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(PythonArrowOutput.scala:117)
"""


def test_metalogs_own_error_on_an_executor_is_the_line_the_python_engine_prints() -> None:
    """Before: the same line behind "Spark failed: metalog.errors.LogError: "."""
    line = "/logs/a: offset 2: the batch's timestamp 4611686018427387904 ms is beyond what Spark's TIMESTAMP holds"
    said = spark_error(RuntimeError(WORKER_FAILED.format(raised=f"metalog.errors.LogError: {line}")))
    assert isinstance(said, MetalogError) and str(said) == line


def test_another_error_on_an_executor_names_its_type_and_message() -> None:
    """Before: pyarrow's ArrowInvalid (not named ...Error) was passed over for the worker's empty headline."""
    raised = "pyarrow.lib.ArrowInvalid: Casting from timestamp[ms] to timestamp[us] would result in out of bounds"
    said = spark_error(RuntimeError(WORKER_FAILED.format(raised=raised)))
    assert str(said) == f"Spark failed: {raised}"


def test_no_private_attribute_of_pyspark_is_written() -> None:
    """Issue #25 item 6: the session's launch and stop write none of pyspark's private slots (before:
    ``SparkContext._gateway``, ``_jvm``, ``_active_spark_context``, ``SparkSession._instantiatedSession``); a
    later session after a killed JVM is refused in one line instead (``_refuse_a_dead_jvm``)."""
    import ast
    import inspect

    from metalog.analysis.engines import spark, spark_ahead, spark_daemon, spark_session, spark_tables

    for module in (spark, spark_ahead, spark_daemon, spark_session, spark_tables):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AugAssign | ast.AnnAssign) else []
            for target in [t for tgt in targets for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]:
                ours = isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"
                assert ours or not (isinstance(target, ast.Attribute) and target.attr.startswith("_")), (
                    module.__name__, ast.unparse(target))


def test_the_jvms_startup_notices_are_not_passed_on_and_nothing_else_is_held() -> None:
    """JDK 24 and later warn of an --add-opens of Spark's own options for a package they no longer have (JDK 25
    with Spark 4.3: "WARNING: package sun.security.action not in java.base"); it went to the user's stderr."""
    for line in ("WARNING: package sun.security.action not in java.base\n",
                 "WARNING: package sun.nio.cs not in java.base",
                 "WARNING: Using incubator modules: jdk.incubator.vector",
                 "Setting default log level to \"WARN\".\n", "To adjust logging level use sc.setLogLevel(newLevel)."):
        assert jvm_notice(line), line
    for line in ("12:00:01 ERROR SparkContext: Error initializing SparkContext.\n",
                 "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space",
                 "WARNING: package sun.security.action not in java.base; and something else", "WARNING: A terminally "
                 "deprecated method in sun.misc.Unsafe has been called"):
        assert not jvm_notice(line), line


class _Recorder:
    def __init__(self, name: str, calls: list[str]) -> None:
        self.name, self.calls = name, calls

    def setLogLevel(self, level: str) -> None:  # noqa: N802 - pyspark's name
        self.calls.append(f"{self.name}.setLogLevel({level})")

    def stop(self) -> None:
        self.calls.append(f"{self.name}.stop()")


def test_a_context_stops_with_its_jvm_logging_nothing_of_its_own_shutdown() -> None:
    # a standalone cluster's executors reporting to a scheduler that has stopped made the driver log an ERROR and
    # a Java stack after metalog's one line (test_spark_archives saw it under load): the level is off first
    calls: list[str] = []
    stop_context(_Recorder("context", calls), _Recorder("session", calls))
    assert calls == ["context.setLogLevel(OFF)", "session.stop()", "context.stop()"]
    calls.clear()
    stop_context(_Recorder("context", calls))
    assert calls == ["context.setLogLevel(OFF)", "context.stop()"]


class _CountedPoll:
    """``select`` as pyspark's accumulator server sees it, counting the polls that waited their whole timeout."""

    POLLIN, POLLHUP = select.POLLIN, select.POLLHUP

    def __init__(self) -> None:
        self.timed_out = 0

    def poll(self) -> Any:
        counted, poller = self, select.poll()

        class Poller:
            def register(self, fd: Any, events: int) -> None:
                poller.register(fd, events)

            def unregister(self, fd: Any) -> None:
                poller.unregister(fd)

            def poll(self, timeout: int) -> list[tuple[int, int]]:
                got = poller.poll(timeout)
                counted.timed_out += not got
                return got

        return Poller()


class _Jvm:
    """What the driver's JVM does with pyspark's accumulator server (Spark's ``PythonAccumulatorV2.merge``): at the
    first task's end it connects and sends the token; at each task's end it sends the task's updates (none here)
    and waits for the server's acknowledgement."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.connection: socket.socket | None = None

    def task_ended(self) -> None:
        if self.connection is None:
            self.connection = socket.create_connection(("localhost", self.port))
            self.connection.sendall(self.token.encode())
        self.connection.sendall(struct.pack("!i", 0))
        assert self.connection.recv(1) == b"\x01"


class _Context:
    """A SparkContext as ``release_accumulators`` uses it: its accumulator server, and jobs of one task."""

    def __init__(self, server: Any, jvm: _Jvm) -> None:
        self._accumulatorServer, self.jvm = server, jvm

    def parallelize(self, items: list[int], slices: int) -> _Context:
        return self

    def count(self) -> int:
        self.jvm.task_ended()
        return 1


def test_the_accumulator_server_is_shut_down_without_waiting_for_its_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    # SparkContext.stop shuts pyspark's accumulator server down, whose loop serving the JVM's connection looks
    # whether it should end once a second: every run of the command waited up to a second for it at its end
    accumulators = pytest.importorskip("pyspark.accumulators")
    polls = _CountedPoll()
    monkeypatch.setattr(accumulators, "select", polls)
    server = accumulators.AccumulatorTCPServer(("localhost", 0), accumulators.UpdateRequestHandler, "secret")
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    jvm = _Jvm(server.server_address[1], "secret")
    try:
        jvm.task_ended()  # a job ran
        release_accumulators(_Context(server, jvm))
        serving.join(timeout=30)
        assert not serving.is_alive() and server.server_shutdown
        assert polls.timed_out == 0
        release_accumulators(_Context(server, jvm))  # a second time: nothing to do
    finally:
        if serving.is_alive():
            server.shutdown()
        if jvm.connection is not None:
            jvm.connection.close()


class _Launched:
    proc = None  # (as under spark-submit: no JVM of ours to watch)


@pytest.fixture
def no_jvm_yet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """``quiet_gateway`` as in a process that has launched no JVM, pyspark's launch to be replaced, nothing it sets
    left behind; the settings to call it with."""
    pytest.importorskip("pyspark.java_gateway")
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_gateway", None)
    monkeypatch.setattr(spark_session.JVM, "gateway", spark_session.JVM.gateway)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "")
    monkeypatch.setenv("METALOG_SPARK_CLASS_ARCHIVE", "off")
    return {"spark.driver.memory": "1g", "spark.driver.extraJavaOptions": ""}


def test_what_pysparks_converters_import_is_imported_while_the_jvm_launches(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_jvm_yet: Any) -> None:
    # pyspark's py4j converters import pyspark.testing.utils (and with it pandas and pyarrow, where installed) at the
    # first call into the JVM with an argument, inside the SparkContext's start: 0.23-0.25 s of the driver's CPU on
    # the critical path of every run, while during the launch before it the driver only waits
    from pyspark import java_gateway

    (tmp_path / "metalog_probe_converters.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spark_session, "CONVERTER_IMPORTS", ("metalog_probe_converters",))

    def launch(conf: Any, popen_kwargs: Any) -> _Launched:
        deadline = time.monotonic() + 30
        while "metalog_probe_converters" not in sys.modules:
            assert time.monotonic() < deadline, "not imported while the JVM launched"
            time.sleep(0.01)
        return _Launched()

    monkeypatch.setattr(java_gateway, "launch_gateway", launch)
    try:
        assert isinstance(spark_session.quiet_gateway(no_jvm_yet, tmp_path), _Launched)
    finally:
        sys.modules.pop("metalog_probe_converters", None)


def test_work_meanwhile_starts_as_the_jvm_launches_and_is_stopped_before_the_context_starts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_jvm_yet: Any) -> None:
    from pyspark import java_gateway

    events: list[str] = []

    class Work:
        def start(self) -> None:
            events.append("start")

        def stop(self) -> None:
            events.append("stop")

    def launch(conf: Any, popen_kwargs: Any) -> _Launched:
        events.append("launch")
        return _Launched()

    monkeypatch.setattr(java_gateway, "launch_gateway", launch)
    spark_session.quiet_gateway(no_jvm_yet, tmp_path, Work())
    assert events == ["start", "launch", "stop"]


@pytest.mark.parametrize(("master", "cores"), [("local", 1), ("local[2]", 2), ("local[3,4]", 3), ("local[*]", None),
                                               (None, None), ("spark://h:7077", 0), ("yarn", 0), ("local[x]", 0)])
def test_a_local_masters_cores_are_known_before_its_context_starts(master: str | None, cores: int | None) -> None:
    """What ``spark_meanwhile.MeanwhileStarts`` plans the driver's start states on (``*``: this process's CPUs, as
    the JVM counts them); none for another master."""
    from metalog.analysis.engines.spark_session import local_cores

    expected = len(os.sched_getaffinity(0)) if cores is None else cores or None
    assert local_cores(master) == expected
