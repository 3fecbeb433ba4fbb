"""Shared fixtures (the Kafka-written vectors that live in tests/data/kafka), the suite's markers and which
codec core runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.quick import QUICK_EXAMPLES, kept_in_quick_loop

# Hypothesis: one profile for every property test, loaded before any test module builds its own settings (which
# inherit from it). No deadline: on a 2-core machine shared with other work an example's time says nothing about
# metalog (its speed is measured with benchmarks/, never in tests), so a deadline only makes tests flaky. CI
# (HYPOTHESIS_PROFILE=ci, set by .ci/run) is derandomized: a CI verdict is decided by the code under test, not by
# a lucky draw, and any failure it reports comes back on every run; new random examples are what developers'
# runs are for (each draws afresh, and replays its past failures from .hypothesis/). CI runs twice as many
# examples as a developer's run, since it draws the same ones every time.
# The quick loop (``--quick``, which scripts/test.sh --quick passes) draws a quarter of the examples: the tests that
# set no budget take the quick profile's, and those that set one scale it by tests.quick.examples.
settings.register_profile("metalog", deadline=None)
settings.register_profile("ci", settings.get_profile("metalog"), derandomize=True, database=None,
                          max_examples=200, print_blob=True)
settings.register_profile("quick", settings.get_profile("metalog"), max_examples=QUICK_EXAMPLES)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "metalog"))

# Spark's JVMs in the tests (and the commands they run) neither use nor write a class archive in the user's cache
# directory; tests/analysis/engines/test_spark_classes.py runs them with one in a directory of its own
os.environ.setdefault("METALOG_SPARK_CLASS_ARCHIVE", "off")

DATA = Path(__file__).parent / "data" / "kafka"
SHARED_SCHEMAS = Path(__file__).resolve().parents[2] / "shared" / "kafka-reference" / "schemas"


def pytest_report_header(config: pytest.Config) -> str:
    from metalog.bench import cores
    from metalog.codec import core

    return f"metalog codec: {core.status()}; log: {cores.log_status()}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quick", action="store_true",
                     help="the inner loop's share of the suite (scripts/test.sh --quick): of a test marked subset, "
                          "only the cases its keep= picks; Hypothesis' quick profile (a quarter of the examples), "
                          "unless HYPOTHESIS_PROFILE names another")


def pytest_configure(config: pytest.Config) -> None:
    """--quick: the quick profile, loaded before any test module builds its settings. METALOG_REQUIRE_COMPILED=1
    (CI's compiled run): a silent fall back to the pure codec or the pure log core must not pass green."""
    if config.getoption("quick") and "HYPOTHESIS_PROFILE" not in os.environ:
        settings.load_profile("quick")
    if os.environ.get("METALOG_REQUIRE_COMPILED", "") in ("", "0"):
        return
    from metalog.bench import cores
    from metalog.codec import core

    if not core.compiled_active() or core.load_all():
        raise pytest.UsageError(f"METALOG_REQUIRE_COMPILED is set, but the codec core is: {core.status()}")
    if not cores.compiled_log_core():
        raise pytest.UsageError(f"METALOG_REQUIRE_COMPILED is set, but the log core is: {cores.log_status()}")


def load_vectors() -> dict[str, Any]:
    return json.loads((DATA / "kafka-vectors.json").read_text())


def kafka_final_image(scenario: dict[str, Any]) -> dict[str, Any]:
    """A scenario's ``finalImage`` as ``image_to_json`` writes it: Kafka's vector writes the domains of the image
    that its scenario touches; the rest (controllers, producer ids, ACLs, client quotas, SCRAM users and
    delegation tokens), which no record of the scenario touches, are empty, as Kafka's empty image has them."""
    return {**scenario["finalImage"], "controllers": {}, "nextProducerId": None, "acls": {}, "clientQuotas": {},
            "scram": {"SCRAM-SHA-256": [], "SCRAM-SHA-512": []}, "scramCredentials": {}, "delegationTokens": {}}


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test with what its fixtures need (FIXTURE_MARKERS), so no test that starts Spark can be left
    in ``-m "not spark"`` by forgetting its marker. With --quick, leaves out the cases of a test marked subset
    that its keep= does not pick (pytest counts them as deselected)."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            for marker in FIXTURE_MARKERS.get(fixture, ()):
                item.add_marker(marker)
    if config.getoption("quick"):
        left_out = [item for item in items if not kept_in_quick_loop(item)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if kept_in_quick_loop(item)]
