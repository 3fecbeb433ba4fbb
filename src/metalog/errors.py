"""One exception hierarchy for all of metalog.

Every error says where it happened: the message and version being decoded, the
field path inside it and the byte offset, and (for files) the file and position.
"""

from __future__ import annotations


class MetalogError(Exception):
    """Base of every error metalog raises on purpose."""


class CodecError(MetalogError):
    """A message could not be encoded or decoded."""

    def __init__(
        self,
        reason: str,
        *,
        message: str | None = None,
        version: int | None = None,
        field: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.message = message
        self.version = version
        self.field = field
        self.offset = offset
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = []
        if self.message is not None:
            where.append(self.message if self.version is None else f"{self.message} v{self.version}")
        if self.field:
            where.append(f"field {self.field}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class DecodeError(CodecError):
    """Bytes that are not a valid encoding of the message asked for."""


class EncodeError(CodecError):
    """A value that cannot be written at the version asked for."""


class UnknownMessageError(CodecError, KeyError):
    """A message, struct or api key metalog has no definition for; the text names it and what is known.

    Also a KeyError, the lookup error it replaces, so ``except KeyError`` keeps catching it.
    """

    __str__ = BaseException.__str__  # KeyError's would show the text in quotes


class SchemaError(MetalogError):
    """A schema definition that breaks the rules of Kafka's message format."""


class LogError(MetalogError):
    """A problem with the on-disk metadata log or a snapshot file: names the file and byte position."""

    def __init__(self, reason: str, *, file: object = None, position: int | None = None) -> None:
        self.reason = reason
        self.file = None if file is None else str(file)
        self.position = position
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.position is not None:
            where.append(f"byte {self.position}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class CorruptBatchError(LogError):
    """A record batch that fails validation (CRC, length, magic, offsets, records)."""


class LogLockedError(LogError):
    """Another writer holds the log directory's lock."""


class SnapshotError(LogError):
    """A ``.checkpoint`` file that is not a valid Kafka snapshot."""


class ReplayError(MetalogError):
    """A metadata record that cannot apply to the state it meets (wrong epoch, unknown topic, ...)."""

    def __init__(self, reason: str, *, offset: int | None = None, record: str | None = None) -> None:
        self.reason = reason
        self.offset = offset
        self.record = record
        where = []
        if offset is not None:
            where.append(f"offset {offset}")
        if record:
            where.append(record)
        super().__init__(f"{', '.join(where)}: {reason}" if where else reason)


class TruncatedBatchError(CorruptBatchError):
    """A batch that runs past the end of its file: what a torn write at the tail leaves behind."""


class PointError(MetalogError):
    """An offset or a time that names no state Kafka's loader published: before the log or its first published
    state, past its end, or not a time at all."""
