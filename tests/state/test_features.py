"""The features a cluster formatted for a release starts with (Kafka's Feature.defaultLevel over each
FeatureVersion's bootstrapMetadataVersion, BootstrapMetadata.fromVersions)."""

from __future__ import annotations

import pytest

from metalog.state.enums import METADATA_VERSION_LEVELS
from metalog.state.features import bootstrap_feature_levels, bootstrap_records, release_version

MV = METADATA_VERSION_LEVELS


@pytest.mark.parametrize(("release", "features"), [
    ("3.3-IV0", {}),
    ("3.9-IV0", {}),  # kraft.version has no FeatureLevelRecord; nothing else exists before 4.0
    ("4.0-IV0", {"group.version": 1}),  # GV_1 from IBP_4_0_IV0
    ("4.0-IV1", {"group.version": 1}),
    ("4.0-IV2", {"group.version": 1, "transaction.version": 2}),  # TV_1 and TV_2 from IBP_4_0_IV2
    ("4.1-IV0", {"eligible.leader.replicas.version": 1, "group.version": 1, "transaction.version": 2}),
    ("4.2-IV0", {"eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1,
                 "transaction.version": 2}),
    ("4.2-IV1", {"eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 1,
                 "streams.version": 1, "transaction.version": 2}),
])
def test_default_feature_levels_of_a_release(release: str, features: dict[str, int]) -> None:
    levels = bootstrap_feature_levels(MV[release])
    assert levels == {"metadata.version": MV[release], **features}
    assert list(levels) == ["metadata.version", *sorted(features)]  # fromVersions: metadata.version, then by name


def test_the_records_are_feature_level_records_at_version_0() -> None:
    records = bootstrap_records(MV["4.0-IV3"])
    assert [(type(r).__name__, r.name, r.feature_level, v) for r, v in records] == [
        ("FeatureLevelRecord", "metadata.version", 25, 0), ("FeatureLevelRecord", "group.version", 1, 0),
        ("FeatureLevelRecord", "transaction.version", 2, 0)]


@pytest.mark.parametrize(("text", "level"), [("3.9-IV0", 21), ("3.9", 21), ("3.7", 19), ("4.0", 25),
                                             ("3.3-IV0", 4), (" 3.8 ", 20)])
def test_release_versions_as_kafka_reads_them(text: str, level: int) -> None:
    """MetadataVersion.fromVersionString: a release without IV means its latest inter-version."""
    assert release_version(text) == level


@pytest.mark.parametrize(("text", "message"), [
    ("3.2-IV0", "older than 3.3-IV0"), ("3.0", "older than 3.3-IV0"), ("9.9", "unknown release version '9.9'"),
    ("latest", "unknown release version"), ("17", "unknown release version")])
def test_release_versions_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        release_version(text)
