"""Shared fixtures: the Kafka-written vectors that live in tests/data/kafka; which codec core runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "kafka"
SHARED_SCHEMAS = Path(__file__).resolve().parents[2] / "shared" / "kafka-reference" / "schemas"


def pytest_report_header(config: pytest.Config) -> str:
    from metalog.codec import core

    return f"metalog codec: {core.status()}"


def pytest_configure(config: pytest.Config) -> None:
    """METALOG_REQUIRE_COMPILED=1 (CI's compiled run): a silent fall back to the pure codec must not pass green."""
    if os.environ.get("METALOG_REQUIRE_COMPILED", "") in ("", "0"):
        return
    from metalog.codec import core

    if not core.compiled_active() or core.load_all():
        raise pytest.UsageError(f"METALOG_REQUIRE_COMPILED is set, but the codec core is: {core.status()}")


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
