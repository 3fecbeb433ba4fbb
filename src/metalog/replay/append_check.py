"""What a controller would refuse to append: records replayed over the state at the log's end before they are
written (``metalog log append``).

Kafka's controller only writes records it has replayed against its own state; a record that replay refuses (a
PartitionChangeRecord for a topic that does not exist, an EndTransactionRecord with no transaction open) would,
once in the log, stop every later replay of it. The records are replayed with the state layer's own rules
(``metalog.state``, through the loader Kafka's brokers use), as the log's values, from the state a replay of the
whole log reaches, an open transaction included.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from metalog.errors import CorruptBatchError, DecodeError, MetalogError, ReplayError
from metalog.log import files
from metalog.log.recovery import unannounced
from metalog.replay.history import MetadataHistory
from metalog.state import MetadataLoader


@dataclass(frozen=True)
class Refused:
    """The first record replay refuses: its index among those given, and why."""

    index: int
    error: MetalogError


def state_at_end(path: str | os.PathLike[str]) -> tuple[MetadataLoader, int]:
    """A loader holding the state at the log's end (an open transaction's records included), and the end offset; a
    log that does not exist yet (``log append --create``) is the empty state. Opening the log raises what any open
    raises; damage is a CorruptBatchError; a record of the log that does not replay, a ReplayError saying so."""
    root = Path(path)
    if not (root / files.METADATA_PARTITION_DIR).is_dir() and root.name != files.METADATA_PARTITION_DIR:
        return MetadataLoader(), 0
    with unannounced():  # the writer's open that follows says what this one finds (a torn tail it cuts)
        history = MetadataHistory(root)
    with history:
        try:
            return history.loader_at_end(), history.log.log_end_offset
        except CorruptBatchError:
            raise
        except MetalogError as e:
            raise ReplayError(f"the state at the log's end cannot be replayed to check records against it ({e})") \
                from None


def first_refused(loader: MetadataLoader, records: Sequence[tuple[int, bytes]]) -> Refused | None:
    """Replay ``(offset, value)`` records, in order, over the loader's state: the first that replay refuses."""
    for i, (offset, value) in enumerate(records):
        try:
            loader.replay_value(value, offset)
        except (ReplayError, DecodeError) as e:
            return Refused(i, e)
    return None
