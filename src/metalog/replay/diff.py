"""What changed between two images: brokers, directories, topics, partitions, features, configs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
from metalog.secrets import KEPT, Secrets
from metalog.state.enums import CONFIG_RESOURCE_TYPES, ZK_MIGRATION_STATES, metadata_version_name
from metalog.state.image import MetadataImage, PartitionRegistration
from metalog.text import escape

# Partition fields a diff reports, as (attribute, JSON name).
_PARTITION_FIELDS = (("leader", "leader"), ("leader_epoch", "leaderEpoch"), ("isr", "isr"),
                     ("replicas", "replicas"), ("directories", "directories"), ("elr", "elr"),
                     ("adding_replicas", "addingReplicas"), ("removing_replicas", "removingReplicas"))


@dataclass
class PartitionChange:
    topic: str
    partition: int
    changes: dict[str, tuple[Any, Any]]  # JSON field name -> (before, after)


@dataclass
class ImageDiff:
    from_offset: int
    to_offset: int
    metadata_version: tuple[str | None, str | None] | None = None
    zk_migration_state: tuple[str, str] | None = None
    brokers_registered: list[int] = field(default_factory=list)
    brokers_unregistered: list[int] = field(default_factory=list)
    brokers_restarted: list[int] = field(default_factory=list)  # registered again with a new epoch
    brokers_fenced: list[int] = field(default_factory=list)
    brokers_unfenced: list[int] = field(default_factory=list)
    brokers_shutting_down: list[int] = field(default_factory=list)  # entered controlled shutdown
    dirs_lost: dict[int, list[str]] = field(default_factory=dict)
    dirs_added: dict[int, list[str]] = field(default_factory=dict)
    topics_created: list[str] = field(default_factory=list)
    topics_removed: list[str] = field(default_factory=list)
    partitions: list[PartitionChange] = field(default_factory=list)
    configs: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing changed (the JSON form always has its keys: look at the fields)."""
        return not any(getattr(self, f.name) for f in fields(self) if f.name not in ("from_offset", "to_offset"))

    def to_json(self) -> dict[str, Any]:
        return {
            "fromOffset": self.from_offset, "toOffset": self.to_offset,
            "metadataVersion": list(self.metadata_version) if self.metadata_version else None,
            "zkMigrationState": list(self.zk_migration_state) if self.zk_migration_state else None,
            "brokers": {"registered": self.brokers_registered, "unregistered": self.brokers_unregistered,
                        "restarted": self.brokers_restarted, "fenced": self.brokers_fenced,
                        "unfenced": self.brokers_unfenced, "shuttingDown": self.brokers_shutting_down,
                        "dirsLost": {str(b): d for b, d in self.dirs_lost.items()},
                        "dirsAdded": {str(b): d for b, d in self.dirs_added.items()}},
            "topics": {"created": self.topics_created, "removed": self.topics_removed},
            "partitions": [{"topic": p.topic, "partition": p.partition,
                            "changes": {k: {"from": a, "to": b} for k, (a, b) in p.changes.items()}}
                           for p in self.partitions],
            "configs": [{"resource": r, "key": k, "from": a, "to": b} for r, k, a, b in self.configs],
        }


def diff_images(before: MetadataImage, after: MetadataImage, secrets: Secrets = KEPT) -> ImageDiff:
    """What changed from ``before`` to ``after``; a sensitive config's values as ``secrets`` shows them (a change
    of one is reported, ``[redacted] -> [redacted]``, when they are kept)."""
    d = ImageDiff(before.offset, after.offset)
    fa, fb = before.features, after.features
    if fa.metadata_version != fb.metadata_version:
        d.metadata_version = (metadata_version_name(fa.metadata_version),
                              metadata_version_name(fb.metadata_version))
    if fa.zk_migration_state != fb.zk_migration_state:
        d.zk_migration_state = (ZK_MIGRATION_STATES.get(fa.zk_migration_state, "?"),
                                ZK_MIGRATION_STATES.get(fb.zk_migration_state, "?"))
    _brokers(before, after, d)
    _topics(before, after, d)
    for resource in sorted(before.configs.keys() | after.configs.keys()):
        old, new = before.configs.get(resource, {}), after.configs.get(resource, {})
        name = f"{CONFIG_RESOURCE_TYPES.get(resource[0], resource[0])}/{resource[1]}"
        for key in sorted(old.keys() | new.keys()):
            if old.get(key) != new.get(key):
                d.configs.append((name, key, secrets.config(key, old.get(key)), secrets.config(key, new.get(key))))
    return d


def _brokers(before: MetadataImage, after: MetadataImage, d: ImageDiff) -> None:
    for bid in sorted(before.brokers.keys() | after.brokers.keys()):
        old, new = before.brokers.get(bid), after.brokers.get(bid)
        if old is None:
            d.brokers_registered.append(bid)
            continue
        if new is None:
            d.brokers_unregistered.append(bid)
            continue
        if old.epoch != new.epoch:
            d.brokers_restarted.append(bid)
        if old.fenced != new.fenced:
            (d.brokers_fenced if new.fenced else d.brokers_unfenced).append(bid)
        if new.in_controlled_shutdown and not old.in_controlled_shutdown:
            d.brokers_shutting_down.append(bid)
        lost = [str(x) for x in old.directories if x not in new.directories]
        added = [str(x) for x in new.directories if x not in old.directories]
        if lost:
            d.dirs_lost[bid] = lost
        if added:
            d.dirs_added[bid] = added


def _topics(before: MetadataImage, after: MetadataImage, d: ImageDiff) -> None:
    for tid in before.topics.keys() - after.topics.keys():
        d.topics_removed.append(before.topics[tid].name)
    for tid, topic in after.topics.items():
        old_topic = before.topics.get(tid)
        if old_topic is None:
            d.topics_created.append(topic.name)
            continue
        if old_topic is topic:
            continue  # shared by the two images: nothing changed
        for pid in sorted(topic.partitions):
            old, new = old_topic.partitions.get(pid), topic.partitions[pid]
            if old is not new and old is not None:
                changes = _partition_changes(old, new)
                if changes:
                    d.partitions.append(PartitionChange(topic.name, pid, changes))
    d.topics_removed.sort()
    d.topics_created.sort()
    d.partitions.sort(key=lambda p: (p.topic, p.partition))


def _partition_changes(old: PartitionRegistration, new: PartitionRegistration) -> dict[str, tuple[Any, Any]]:
    out = {}
    for attr, key in _PARTITION_FIELDS:
        a, b = getattr(old, attr), getattr(new, attr)
        if a != b:
            out[key] = (_plain(a), _plain(b))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [str(x) if isinstance(x, bytes) else x for x in value]
    return value


def render_diff(d: ImageDiff) -> str:
    """The diff as readable text: one section per kind of change."""
    lines = [f"changes from {point_name(d.from_offset)} to {point_name(d.to_offset)}"]
    lines += _cluster_lines(d)
    lines += _broker_lines(d)
    if d.topics_created:
        lines.append(f"  topics created: {', '.join(map(escape, d.topics_created))}")
    if d.topics_removed:
        lines.append(f"  topics removed: {', '.join(map(escape, d.topics_removed))}")
    lines += _partition_lines(d)
    lines += _config_lines(d)
    if len(lines) == 1:
        lines.append("  no changes")
    return "\n".join(lines)


def _cluster_lines(d: ImageDiff) -> list[str]:
    lines = []
    if d.metadata_version:
        lines.append(f"  metadata.version: {_cell(d.metadata_version[0])} -> {_cell(d.metadata_version[1])}")
    if d.zk_migration_state:
        lines.append(f"  ZK migration state: {d.zk_migration_state[0]} -> {d.zk_migration_state[1]}")
    return lines


def _broker_lines(d: ImageDiff) -> list[str]:
    lines = []
    for label, ids in (("registered", d.brokers_registered), ("unregistered", d.brokers_unregistered),
                       ("restarted", d.brokers_restarted), ("fenced", d.brokers_fenced),
                       ("unfenced", d.brokers_unfenced), ("in controlled shutdown", d.brokers_shutting_down)):
        if ids:
            lines.append(f"  brokers {label}: {', '.join(map(str, ids))}")
    for label, dirs in (("lost", d.dirs_lost), ("added", d.dirs_added)):
        for bid, names in dirs.items():
            lines.append(f"  broker {bid} log dirs {label}: {', '.join(names)}")
    return lines


def _partition_lines(d: ImageDiff) -> list[str]:
    if not d.partitions:
        return []
    rows = [("PARTITION", "FIELD", "BEFORE", "AFTER")]
    for p in d.partitions:
        for key, (a, b) in p.changes.items():
            rows.append((f"{p.topic}-{p.partition}", key, _cell(a), _cell(b)))
    return [f"  partitions changed: {len(d.partitions)}", *("    " + line for line in table(rows))]


def _config_lines(d: ImageDiff) -> list[str]:
    if not d.configs:
        return []
    rows = [("RESOURCE", "KEY", "BEFORE", "AFTER")]
    rows += [(r, k, _cell(a), _cell(b)) for r, k, a, b in d.configs]
    return ["  configs changed:", *("    " + line for line in table(rows))]


def point_name(offset: int) -> str:
    """``offset N``, or ``start`` for the empty state before the log (offset -1, as Kafka's
    MetadataProvenance.EMPTY; the JSON form keeps -1)."""
    return "start" if offset < 0 else f"offset {offset}"


_RESERVED = {str(MIGRATING): "MIGRATING", str(UNASSIGNED): "UNASSIGNED", str(LOST): "LOST"}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "[" + ",".join(_RESERVED.get(x, str(x)) if isinstance(x, str) else str(x) for x in value) + "]"
    return str(value)


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns; the first row is the header. Every cell is shown escaped (``metalog.text.escape``): a
    name or value from the log stays in its cell, and its row stays one line."""
    cells = [[escape(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
