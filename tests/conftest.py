"""Shared fixtures: the Kafka-written vectors that live in tests/data/kafka."""

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
