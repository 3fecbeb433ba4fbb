"""MetadataLoader: Kafka's loader rules on top of MetadataDelta.

- Records of a metadata transaction become visible together at EndTransaction; an aborted
  transaction's records are dropped; while one is open, the published image excludes it.
- Loading a snapshot replaces the image: whatever the snapshot does not mention is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from metalog.codec import message_class
from metalog.codec.definitions import METADATA_BY_API_KEY
from metalog.codec.framing import FRAME_VERSION, decode_metadata_record, encode_metadata_record, metadata_readers
from metalog.errors import DecodeError, ReplayError
from metalog.state.delta import MetadataDelta, located, rule_for
from metalog.state.image import EMPTY, MetadataImage

_TRANSACTION_MARKERS = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"})
_NO_OP = encode_metadata_record(message_class("NoOpRecord")(), 0)
Reader = Callable[[bytes, int], tuple[Any, int]]
Rule = Callable[[MetadataDelta, Any], None]


class MetadataLoader:
    """Replays records in log order; ``image`` is the published state (what a reader of the log sees)."""

    def __init__(self, image: MetadataImage = EMPTY) -> None:
        if not _DISPATCH:
            _fill_dispatch()
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

    def replay_value(self, value: bytes | None, offset: int) -> None:
        """Decode and replay one record value as the log stores it: ``replay`` without the detours, for
        replay's hot loop. The generated reader and the rule are found in one lookup by the value's
        apiKey and version bytes; anything unusual goes the checked way (raising DecodeError)."""
        if value == _NO_OP:  # most of a quiet cluster's log; it changes nothing (``skip``, inline)
            self._delta.offset = offset
            self._pending = True
            self.offset = offset
            return
        try:
            reader, rule = _DISPATCH[value[1] << 8 | value[2]]  # type: ignore[index]
            record, end = reader(value, 3)  # type: ignore[arg-type]
            if end != len(value) or value[0] != FRAME_VERSION:  # type: ignore[arg-type,index]
                raise DecodeError("not exactly one record")
        except Exception:  # the checked path raises the precise error, or handles a rare form
            if value is None:
                raise DecodeError("the record has no value") from None
            self.replay(decode_metadata_record(value).message, offset)
            return
        if rule is None:
            self._transaction(record.NAME, offset)
        else:
            delta = self._delta
            try:
                rule(delta, record)
            except ReplayError as e:
                raise located(e, offset, record) from None
            delta.offset = offset
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


def _fill_dispatch() -> None:
    """apiKey << 8 | version -> (the generated reader, the delta's rule; None for a transaction marker)."""
    table = _DISPATCH
    for key, reader in metadata_readers().items():
        name = METADATA_BY_API_KEY[key >> 8].name
        if name in _TRANSACTION_MARKERS:
            table[key] = (reader, None)
        elif (rule := rule_for(name)) is not None:
            table[key] = (reader, rule)


# filled by the first loader: importing every record class takes time
_DISPATCH: dict[int, tuple[Reader, Rule | None]] = {}
