"""Events between successive timeline rows: phase changes, metadata.version changes, directory failures,
JBOD transition steps, aborted transactions and controller leader changes."""

from __future__ import annotations

from typing import Any

from metalog.state.image import BrokerRegistration

EVENT_COLUMNS: dict[str, str] = {
    "cluster": "the log directory's name",
    "offset": "the offset of the batch the event shows in (of the abort record, for an aborted transaction)",
    "timestamp": "the batch's max timestamp, epoch milliseconds",
    "event": "phase-change, dir-transition, metadata-version, directory-failure, aborted-transaction, "
             "controller-leader (a LeaderChange control batch)",
    "detail": "what changed, e.g. 'hybrid -> dual-write', 'broker 2 lost directory <uuid>' or 'controller 3000 "
              "leads in epoch 5' (LeaderChangeMessage's leaderId; the epoch is the batch's partitionLeaderEpoch)",
}


def row_events(prev: dict[str, Any] | None, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Changes of phase, JBOD transition and metadata.version from ``prev`` to ``row``."""
    out = []
    for column, event, initial in (("metadata_version", "metadata-version", ""),
                                   ("phase", "phase-change", "native"),
                                   ("dir_transition", "dir-transition", "not-started")):
        before = prev[column] if prev is not None else initial
        if row[column] != before:
            out.append(_event(row, event, f"{before or 'unset'} -> {row[column] or 'unset'}"))
    return out


def directory_failures(before: dict[int, BrokerRegistration], after: dict[int, BrokerRegistration],
                       row: dict[str, Any]) -> list[dict[str, Any]]:
    """Directories a broker stopped listing without registering again (same epoch): they went offline."""
    out = []
    for bid, broker in after.items():
        old = before.get(bid)
        if old is None or old is broker or old.epoch != broker.epoch:
            continue
        for directory in old.directories:
            if directory not in broker.directories:
                out.append(_event(row, "directory-failure", f"broker {bid} lost directory {directory}"))
    return out


def aborted(row: dict[str, Any], offset: int, began: int | None) -> dict[str, Any]:
    event = _event(row, "aborted-transaction", f"transaction begun at offset {began} aborted")
    event["offset"] = offset
    return event


def controller_leader(row: dict[str, Any], leader_id: int, epoch: int) -> dict[str, Any]:
    return _event(row, "controller-leader", f"controller {leader_id} leads in epoch {epoch}")


def _event(row: dict[str, Any], event: str, detail: str) -> dict[str, Any]:
    return {"cluster": row["cluster"], "offset": row["last_offset"], "timestamp": row["timestamp"],
            "event": event, "detail": detail}
