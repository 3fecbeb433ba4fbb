"""MetadataLoader: Kafka's loader rules on top of MetadataDelta.

- Records of a metadata transaction become visible together at EndTransaction; an aborted
  transaction's records are dropped; while one is open, the published image excludes it.
- Loading a snapshot replaces the image: whatever the snapshot does not mention is gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from metalog.errors import ReplayError
from metalog.state.delta import MetadataDelta
from metalog.state.image import EMPTY, MetadataImage

_TRANSACTION_MARKERS = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"})


class MetadataLoader:
    """Replays records in log order; ``image`` is the published state (what a reader of the log sees)."""

    def __init__(self, image: MetadataImage = EMPTY) -> None:
        self._published = image
        self._delta = MetadataDelta(image)
        self._pending = False  # records in the delta not yet in the published image
        self.in_transaction = False
        self.transaction_start: int | None = None
        self.offset = image.offset  # the last offset replayed, visible or not

    @property
    def image(self) -> MetadataImage:
        """The state a reader sees after the last record: an open transaction is not yet visible."""
        if self._pending and not self.in_transaction:
            self._published = self._delta.apply()
            self._delta = MetadataDelta(self._published)
            self._pending = False
        return self._published

    def replay(self, record: Any, offset: int) -> None:
        name = record.NAME
        if name in _TRANSACTION_MARKERS:
            self._transaction(name, offset)
        else:
            self._delta.replay(record, offset)
            self._pending = True
        self.offset = offset

    def skip(self, offset: int) -> None:
        """A record that changes nothing (NoOpRecord), replayed without decoding it: only the offset moves."""
        self._delta.offset = offset
        self._pending = True
        self.offset = offset

    def replay_all(self, records: Iterable[tuple[int, Any]]) -> MetadataImage:
        """Replay ``(offset, record)`` pairs and return the published image."""
        for offset, record in records:
            self.replay(record, offset)
        return self.image

    def _transaction(self, name: str, offset: int) -> None:
        if name == "BeginTransactionRecord":
            if self.in_transaction:
                raise ReplayError(f"a transaction is already open (since offset {self.transaction_start})",
                                  offset=offset, record="BEGIN_TRANSACTION_RECORD")
            self.image  # noqa: B018  publish what came before, so an abort returns exactly there
            self.in_transaction, self.transaction_start = True, offset
        elif not self.in_transaction:
            kind = "END_TRANSACTION_RECORD" if name == "EndTransactionRecord" else "ABORT_TRANSACTION_RECORD"
            raise ReplayError("no transaction is open", offset=offset, record=kind)
        elif name == "EndTransactionRecord":
            self.in_transaction, self.transaction_start = False, None
        else:
            self._delta = MetadataDelta(self._published)
            self._pending = False
            self.in_transaction, self.transaction_start = False, None

    def load_snapshot(self, records: Iterable[Any], offset: int) -> MetadataImage:
        """Replace the state with a snapshot's records; ``offset`` is the snapshot's last contained offset."""
        delta = MetadataDelta(EMPTY)
        for record in records:
            delta.replay(record)
        delta.offset = offset
        self._published = delta.apply()
        self._delta = MetadataDelta(self._published)
        self._pending = False
        self.in_transaction, self.transaction_start = False, None
        self.offset = offset
        return self._published
