"""Kafka's finalized features besides metadata.version (KIP-1022), and the levels a cluster formatted for a
release starts at: what ``kafka-storage format --release-version V`` puts into ``bootstrap.checkpoint``.

Each level of a feature names the metadata.version from which a new cluster gets it by default (Kafka's
``FeatureVersion.bootstrapMetadataVersion``; ``Feature.defaultLevel`` takes the highest level whose
metadata.version is at or below the release's). ``BootstrapMetadata.fromVersions`` writes a FeatureLevelRecord
for metadata.version, then one for each other feature whose level is above 0, in name order; kraft.version
never has one (its level lives in the log's KRaftVersionRecord, 0 for a static quorum). Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metalog.state.enums import METADATA_VERSION_LEVELS, METADATA_VERSIONS

if TYPE_CHECKING:
    from metalog.codec.messages import FeatureLevelRecord

# Kafka's MetadataVersion.MINIMUM_BOOTSTRAP_VERSION (3.3-IV0): BootstrapMetadata refuses anything older. Kafka 4.0
# and later refuse anything before 3.3-IV3 (MetadataVersion.MINIMUM_VERSION) as well.
MINIMUM_BOOTSTRAP_VERSION = METADATA_VERSION_LEVELS["3.3-IV0"]

# feature -> its levels above 0 as (level, the metadata.version level it is the default from), from Kafka's
# server-common FeatureVersion enums
FEATURE_DEFAULTS: dict[str, tuple[tuple[int, int], ...]] = {
    "eligible.leader.replicas.version": ((1, METADATA_VERSION_LEVELS["4.1-IV0"]),),  # ELRV_1, KIP-966
    "group.version": ((1, METADATA_VERSION_LEVELS["4.0-IV0"]),),  # GV_1, KIP-848
    "share.version": ((1, METADATA_VERSION_LEVELS["4.2-IV0"]),),  # SV_1, KIP-932
    "streams.version": ((1, METADATA_VERSION_LEVELS["4.2-IV1"]),),  # SV_1, KIP-1071
    # TV_1 and TV_2, KIP-890
    "transaction.version": ((1, METADATA_VERSION_LEVELS["4.0-IV2"]), (2, METADATA_VERSION_LEVELS["4.0-IV2"])),
}


def default_level(feature: str, metadata_version: int) -> int:
    """Kafka's ``Feature.defaultLevel``: the highest level whose metadata.version is at or below
    ``metadata_version`` (0 below all of them)."""
    level = 0
    for candidate, since in FEATURE_DEFAULTS[feature]:
        if since > metadata_version:
            break
        level = candidate
    return level


def bootstrap_feature_levels(metadata_version: int) -> dict[str, int]:
    """metadata.version, then every other feature a cluster formatted at ``metadata_version`` starts above 0, in
    the order ``BootstrapMetadata.fromVersions`` writes their FeatureLevelRecords."""
    levels = {"metadata.version": metadata_version}
    for name in sorted(FEATURE_DEFAULTS):
        level = default_level(name, metadata_version)
        if level > 0:
            levels[name] = level
    return levels


def release_version(text: str) -> int:
    """The metadata.version level ``--release-version`` names: ``3.7-IV2``, or a release ``3.7`` meaning its
    latest (Kafka's MetadataVersion.fromVersionString). ValueError for a version metalog does not know or that
    Kafka cannot bootstrap."""
    s = text.strip()
    level = METADATA_VERSION_LEVELS.get(s)
    if level is None:
        ivs = [lv for lv, name in METADATA_VERSIONS.items() if name.split("-")[0] == s]
        if not ivs:
            known = f"{METADATA_VERSIONS[MINIMUM_BOOTSTRAP_VERSION]} to {METADATA_VERSIONS[max(METADATA_VERSIONS)]}"
            raise ValueError(f"unknown release version {text!r} (give a metadata.version such as 3.9-IV0 or a "
                             f"release such as 3.9; metalog knows {known})")
        level = max(ivs)
    if level < MINIMUM_BOOTSTRAP_VERSION:
        raise ValueError(f"metadata.version {METADATA_VERSIONS[level]} is older than "
                         f"{METADATA_VERSIONS[MINIMUM_BOOTSTRAP_VERSION]}, the oldest a KRaft cluster can be "
                         "formatted at (Kafka's MINIMUM_BOOTSTRAP_VERSION)")
    return level


def bootstrap_records(metadata_version: int) -> list[tuple[FeatureLevelRecord, int]]:
    """The records ``BootstrapMetadata.fromVersions`` makes for a release: a FeatureLevelRecord (version 0) for
    metadata.version and for each other feature above 0."""
    from metalog.codec.messages import FeatureLevelRecord

    return [(FeatureLevelRecord(name=name, feature_level=level), 0)
            for name, level in bootstrap_feature_levels(metadata_version).items()]
