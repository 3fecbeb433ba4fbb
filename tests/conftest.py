"""Shared fixtures (the Kafka-written vectors that live in tests/data/kafka) and the suite's markers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "kafka"
SHARED_SCHEMAS = Path(__file__).resolve().parents[2] / "shared" / "kafka-reference" / "schemas"


def load_vectors() -> dict[str, Any]:
    return json.loads((DATA / "kafka-vectors.json").read_text())


def load_codec_random() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "codec-random.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def kafka_vectors() -> dict[str, Any]:
    return load_vectors()


@pytest.fixture(scope="session")
def jbod_dir() -> Path:
    """Kafka's own files for the KIP-858 scenario (a segment and two snapshots)."""
    return DATA / "jbod-kip858"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the shared Spark session (the ``spark`` fixture of tests/analysis/conftest.py) needs
    pyspark and a JVM: it is marked ``spark`` here, so no such test can be left out of ``-m "not spark"`` by
    forgetting its marker."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
