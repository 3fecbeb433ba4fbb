"""``metalog format``: give log directories their meta.properties, like ``kafka-storage format``."""

from __future__ import annotations

import argparse
import os
from typing import Any

from metalog.errors import MetalogError
from metalog.text import path_text

EXAMPLES = """\
examples:
  metalog format --log-dirs /data/d1,/data/d2,/data/d3 --node-id 1 --cluster-id MkU3OEVBNTcwNTJENDM2Qg
  metalog format --log-dirs /data/d1,/data/d4 --node-id 1 --cluster-id MkU3OEVBNTcwNTJENDM2Qg --ignore-formatted
  metalog format --log-dirs /data/meta --node-id 3000 --cluster-id MkU3OEVBNTcwNTJENDM2Qg --release-version 3.9
  metalog storage info /data/meta                           # what a formatted directory holds

Each directory gets meta.properties with version=1, cluster.id, node.id and a fresh, non-reserved
directory.id: the id the broker registers (BrokerRegistrationRequest.LogDirs) and partitions name
in their Directories (KIP-858). With --release-version each also gets bootstrap.checkpoint, as
kafka-storage format writes it: the metadata a controller starts a new cluster from, a FeatureLevelRecord
for metadata.version and one for each other feature the release turns on by default (group.version from
4.0-IV0, transaction.version from 4.0-IV2, eligible.leader.replicas.version from 4.1-IV0, ...).
--release-version takes a metadata.version (3.9-IV0) or a release (3.9: its latest), 3.3-IV0 or later.
"""


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("format", help="write meta.properties into log directories (kafka-storage format)",
                       description="Formats broker log directories: meta.properties v1 with the cluster id, the "
                                   "node id and a new directory id per directory.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-dirs", required=True, help="comma-separated log directories")
    p.add_argument("--node-id", type=options.NODE_ID, required=True, help="the node.id of the broker or controller")
    p.add_argument("--cluster-id", required=True, help="the cluster id (a 22-character Kafka Uuid)")
    p.add_argument("--ignore-formatted", action="store_true", help="skip directories already formatted")
    p.add_argument("--release-version", metavar="V", help="also write bootstrap.checkpoint for this metadata.version "
                                                           "or release, as kafka-storage format does")
    p.set_defaults(func=_format)


def _format(args: argparse.Namespace) -> int:
    from metalog.storage.log_dirs import format_log_dirs

    dirs = [d for d in args.log_dirs.split(",") if d]
    for d in dirs:
        if os.path.exists(d) and not os.path.isdir(d):
            raise MetalogError(f"{d} is a file, not a log directory")
    levels, records = _bootstrap(args.release_version)
    done = format_log_dirs(dirs, args.node_id, args.cluster_id, args.ignore_formatted, records)
    for path, directory_id in done:
        print(f"Formatted {path_text(path)}: directory.id={directory_id}")
    if levels is not None and done:
        print(f"bootstrap.checkpoint in {'each' if len(done) > 1 else 'it'}: {features_text(levels)}")
    skipped = len(dirs) - len(done)
    if skipped:
        print(f"{skipped} director{'y was' if skipped == 1 else 'ies were'} already formatted and left as they were")
    return 0


def _bootstrap(release: str | None) -> tuple[dict[str, int] | None, list[Any] | None]:
    from metalog.state.features import bootstrap_feature_levels, bootstrap_records, release_version

    if release is None:
        return None, None
    try:
        level = release_version(release)
    except ValueError as e:
        raise MetalogError(f"--release-version: {e}") from None
    return bootstrap_feature_levels(level), bootstrap_records(level)


def features_text(levels: dict[str, int]) -> str:
    """``metadata.version 4.0-IV3 (level 25), group.version 1, transaction.version 2``."""
    from metalog.state.enums import METADATA_VERSION_FEATURE, metadata_version_name

    parts = []
    for feature, level in levels.items():
        if feature == METADATA_VERSION_FEATURE:
            parts.append(f"metadata.version {metadata_version_name(level)} (level {level})")
        else:
            parts.append(f"{feature} {level}")
    return ", ".join(parts)
