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


# markers that follow from a fixture: a test that uses it needs what the fixture needs
FIXTURE_MARKERS = {
    "spark": ("spark",),  # the shared Spark session (tests/analysis/conftest.py)
    "spark_demo": ("spark", "slow"),  # metalog demo on Spark in a process of its own (tests/cli/conftest.py)
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test with what its fixtures need (FIXTURE_MARKERS), so no test that starts Spark can be left
    in ``-m "not spark"`` by forgetting its marker."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            for marker in FIXTURE_MARKERS.get(fixture, ()):
                item.add_marker(marker)
