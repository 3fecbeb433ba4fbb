"""The small files around a log, in Kafka's formats, written atomically (temp file, fsync, rename).

- ``meta.properties`` (log dir root): ``version=1``, ``cluster.id``, ``node.id``, ``directory.id``.
- ``partition.metadata``: ``version: 0`` and ``topic_id: <uuid>`` (the metadata topic's id is fixed).
- ``quorum-state``: one line of QuorumStateData JSON plus ``data_version``.
- ``log-start-offset-checkpoint`` (root): Kafka's offset checkpoint (version, count, ``topic partition offset``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from metalog.codec import Uuid
from metalog.errors import LogError

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
METADATA_TOPIC_ID = Uuid.of(0, 1)  # Kafka's Uuid.METADATA_TOPIC_ID
META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "partition.metadata"
QUORUM_STATE = "quorum-state"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``path`` through ``path.tmp``: fsync the data, rename over, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    data = text.encode() if isinstance(text, str) else text
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---- meta.properties ------------------------------------------------------------------------
def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file of ``key=value`` lines (comments and blank lines skipped)."""
    props: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise LogError(f"not a key=value line: {line!r}", file=path)
        props[key.strip()] = value.strip()
    return props


def write_meta_properties(log_dir: Path, *, cluster_id: str, node_id: int, directory_id: Uuid | None) -> None:
    """meta.properties v1 as Kafka's MetaProperties writes it (Properties.store: comment and date lines)."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    lines = ["#", f"#{stamp}", f"node.id={node_id}"]
    if directory_id is not None:
        lines.append(f"directory.id={directory_id}")
    lines += ["version=1", f"cluster.id={cluster_id}"]
    atomic_write(log_dir / META_PROPERTIES, "\n".join(lines) + "\n")


# ---- partition.metadata ---------------------------------------------------------------------
def partition_metadata_text(topic_id: Uuid = METADATA_TOPIC_ID) -> str:
    return f"version: 0\ntopic_id: {topic_id}\n"


def read_partition_metadata(path: Path) -> Uuid:
    fields = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            fields[key] = value
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise LogError("malformed partition.metadata (expected 'version: 0' and 'topic_id: ...')", file=path)
    try:
        return Uuid.parse(fields["topic_id"])
    except ValueError as e:
        raise LogError(f"malformed topic_id in partition.metadata: {e}", file=path) from None


# ---- quorum-state ---------------------------------------------------------------------------
def quorum_state_json(*, leader_id: int, leader_epoch: int, voted_id: int = -1,
                      voted_directory_id: Uuid | None = None, data_version: int = 1) -> str:
    """One line as FileQuorumStateStore writes it: QuorumStateData's JSON in field order, then data_version."""
    if data_version == 0:
        data: dict[str, Any] = {"clusterId": "", "leaderId": leader_id, "leaderEpoch": leader_epoch,
                                "votedId": voted_id, "appliedOffset": 0, "currentVoters": None}
    elif data_version == 1:
        data = {"leaderId": leader_id, "leaderEpoch": leader_epoch, "votedId": voted_id,
                "votedDirectoryId": str(voted_directory_id or Uuid())}
    else:
        raise LogError(f"quorum-state data_version {data_version} is not 0 or 1")
    data["data_version"] = data_version
    return json.dumps(data, separators=(",", ":"))


def read_quorum_state(path: Path) -> dict[str, Any]:
    from metalog.codec.jsonform import loads  # json.loads, with too deep a nesting a ValueError too

    try:
        first = path.read_text().splitlines()[0]
        state = loads(first)
    except (IndexError, ValueError) as e:
        raise LogError(f"malformed quorum-state: {e}", file=path) from None
    if not isinstance(state, dict) or state.get("data_version") not in (0, 1):
        raise LogError("quorum-state has no data_version 0 or 1", file=path)
    return state


# ---- log-start-offset-checkpoint ------------------------------------------------------------
def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    try:
        if lines[0].strip() != "0":
            raise LogError(f"unknown offset checkpoint version {lines[0]!r}", file=path)
        count = int(lines[1])
        out = {}
        for line in lines[2:2 + count]:
            topic, partition, offset = line.split()
            out[(topic, int(partition))] = int(offset)
    except (IndexError, ValueError) as e:
        raise LogError(f"malformed offset checkpoint: {e}", file=path) from None
    if len(out) != count:
        raise LogError(f"offset checkpoint announces {count} entries, holds {len(out)}", file=path)
    return out


def write_offset_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    atomic_write(path, "\n".join(lines) + "\n")
