"""One Spark session for every Spark test (starting a JVM costs seconds); skipped, saying why, without one."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from metalog.errors import MetalogError


def skip_without_spark_java() -> None:
    """pyspark and a Java runtime, or the test is skipped saying which is missing."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (pip install -e '.[test]' installs it)")
    from metalog.analysis.engines.spark_session import find_java

    try:
        find_java()
    except MetalogError as e:
        pytest.skip(str(e))


@pytest.fixture
def spark_java() -> None:
    """For a test that starts its own JVM (a CLI in a process of its own): ``skip_without_spark_java``."""
    skip_without_spark_java()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The tests' Spark session. Its tests live in test_spark.py: scripts/test.sh runs a file's tests in one
    process (pytest-xdist's --dist loadfile), and a test file elsewhere would start a second JVM in another."""
    skip_without_spark_java()
    from metalog.analysis.engines.spark_session import spark_session

    with spark_session("local[2]", app="metalog tests") as session:
        yield session
