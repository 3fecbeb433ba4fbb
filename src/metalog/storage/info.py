"""``kafka-storage info`` offline: what each log directory's ``meta.properties`` says, the problems Kafka's
StorageTool finds in them, and what metalog adds (every directory's own directory.id, its bootstrap metadata,
whether it holds the metadata log).

Kafka's rules (StorageTool.infoCommand, MetaProperties, MetaPropertiesEnsemble.verify): a path that does not
exist or is not a directory, a directory without meta.properties ("is not formatted"), a meta.properties that
does not load (version 1 needs cluster.id and node.id; version 0 a broker.id; directory.id a Uuid), and
directories whose cluster ids or node ids differ are problems. metalog adds the ensemble's own checks: a
reserved directory.id, and one directory.id in two directories.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metalog.codec.uuid import Uuid
from metalog.errors import MetalogError
from metalog.log import files
from metalog.snapshots.bootstrap import BOOTSTRAP_FILE, read_bootstrap
from metalog.state.enums import METADATA_VERSION_FEATURE, metadata_version_name


@dataclass(frozen=True)
class Bootstrap:
    """A directory's bootstrap.checkpoint: its feature levels (metadata.version first), or why it does not read."""

    features: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def metadata_version(self) -> str | None:
        level = self.features.get(METADATA_VERSION_FEATURE)
        return None if level is None else metadata_version_name(level)

    def to_json(self) -> dict[str, Any]:
        return {"metadataVersion": self.metadata_version, "features": dict(self.features), "error": self.error}


@dataclass(frozen=True)
class DirectoryInfo:
    path: str
    found: bool  # an existing directory
    properties: dict[str, str] | None = None  # meta.properties' known keys, as Kafka's toProperties keeps them
    metadata_log: bool = False  # holds __cluster_metadata-0
    bootstrap: Bootstrap | None = None  # None: no bootstrap.checkpoint

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "found": self.found, "metaProperties": self.properties,
                "metadataLog": self.metadata_log,
                "bootstrap": None if self.bootstrap is None else self.bootstrap.to_json()}


@dataclass(frozen=True)
class StorageInfo:
    directories: list[DirectoryInfo]
    metadata: dict[str, str] | None  # the first formatted directory's, as Kafka's "Found metadata" shows it
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"directories": [d.to_json() for d in self.directories], "metadata": self.metadata,
                "problems": list(self.problems)}


_KNOWN = ("broker.id", "cluster.id", "directory.id", "node.id", "version")


def storage_info(paths: Sequence[str | os.PathLike[str]]) -> StorageInfo:
    """Each directory in Kafka's order (sorted by path), the metadata of the first formatted one, the problems."""
    problems: list[str] = []
    directories = [_directory(str(p), problems) for p in sorted(str(p) for p in paths)]
    formatted = [d for d in directories if d.properties is not None]
    first = formatted[0].properties if formatted else None
    for d in formatted[1:]:
        assert d.properties is not None and first is not None
        if d.properties.get("cluster.id") != first.get("cluster.id"):
            problems.append("Mismatched cluster IDs between storage directories.")
        elif _node(d.properties) != _node(first):
            problems.append("Mismatched node IDs between storage directories.")
    problems += _directory_id_problems(formatted)
    return StorageInfo(directories, first, problems)


def _directory(path: str, problems: list[str]) -> DirectoryInfo:
    p = Path(path)
    if not p.is_dir():
        problems.append(f"{path} does not exist" if not p.exists() else f"{path} is not a directory")
        return DirectoryInfo(path, False)
    meta = p / files.META_PROPERTIES
    props = None
    if not meta.exists():
        problems.append(f"{path} is not formatted.")
    else:
        try:
            props = meta_properties(meta)
        except (MetalogError, OSError, UnicodeDecodeError) as e:
            problems.append(f"Error loading {meta}: {e}")
    bootstrap = None
    if (p / BOOTSTRAP_FILE).exists():
        bootstrap = _bootstrap(p / BOOTSTRAP_FILE)
        if bootstrap.error is not None:
            problems.append(f"{p / BOOTSTRAP_FILE}: {bootstrap.error}")
    return DirectoryInfo(path, True, props, (p / files.METADATA_PARTITION_DIR).is_dir(), bootstrap)


def meta_properties(path: Path) -> dict[str, str]:
    """meta.properties' known keys, checked as Kafka's MetaProperties.Builder checks them."""
    raw = files.read_properties(path)
    version = raw.get("version", "0")
    if version not in ("0", "1"):
        raise MetalogError(f"Unknown meta.properties version {version!r}")
    id_key = "node.id" if version == "1" else "broker.id"
    if version == "1" and "cluster.id" not in raw:
        raise MetalogError("cluster.id was not found.")
    if id_key in raw or version == "1":
        value = raw.get(id_key)
        if value is None or not _is_int(value):
            raise MetalogError(f"{id_key} was not found." if value is None else f"{id_key} is not an integer: "
                               f"{value!r}")
    if "directory.id" in raw:
        try:
            Uuid.parse(raw["directory.id"])
        except ValueError as e:
            raise MetalogError(f"Unable to read directory.id as a Uuid: {e}") from None
    return {k: raw[k] for k in _KNOWN if k in raw and not (k == "broker.id" and version == "1")}


def _is_int(text: str) -> bool:
    try:
        return -(2**31) <= int(text) < 2**31
    except ValueError:
        return False


def _node(props: dict[str, str]) -> str | None:
    return props.get("node.id", props.get("broker.id"))


def _directory_id_problems(formatted: list[DirectoryInfo]) -> list[str]:
    """MetaPropertiesEnsemble.verify: no reserved directory.id, none in two directories."""
    problems: list[str] = []
    seen: dict[Uuid, str] = {}
    for d in formatted:
        text = (d.properties or {}).get("directory.id")
        if text is None:
            continue
        uuid = Uuid.parse(text)
        if uuid.is_reserved:
            problems.append(f"{d.path} has the reserved directory.id {text}")
        elif uuid in seen:
            problems.append(f"directory.id {text} is the id of {seen[uuid]} and of {d.path}")
        seen.setdefault(uuid, d.path)
    return problems


def _bootstrap(path: Path) -> Bootstrap:
    try:
        records = read_bootstrap(path)
    except (MetalogError, OSError) as e:
        return Bootstrap(error=str(e))
    features = {r.name: r.feature_level for r in records if type(r).__name__ == "FeatureLevelRecord"}
    if METADATA_VERSION_FEATURE not in features:
        return Bootstrap(features, f"no FeatureLevelRecord for {METADATA_VERSION_FEATURE} (Kafka refuses it)")
    return Bootstrap(features)
