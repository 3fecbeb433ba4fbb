"""One exception hierarchy for all of metalog: every exception metalog raises on purpose is defined here.

Every error says where it happened: the message and version being decoded, the
field path inside it and the byte offset, and (for files) the file and position.
Some never leave the module that raises them (``Malformed``, ``VarintError``, ``RecordError``, ``ExitShell``,
``IndexProblem``, ``Rejected``, ``NotComparable``): they carry a reason to the code that turns it into one
of the errors users see, or into an answer.
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
    """A record batch that fails validation (CRC, length, magic, offsets, records). Its ``position`` is the batch's
    start, whichever field is wrong (the reason names the field): every verb names the same byte for the same damage,
    the one ``log verify`` names, and the one Kafka's log recovery ("at byte offset") and DumpLogSegments
    ("position:") give a batch. A record's own byte, where one does not decode, is in the reason."""


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


class ImageFormatError(MetalogError):
    """Bytes that are not a valid state image."""


# ---- the codec's fast path -----------------------------------------------------------------------------------
class Malformed(MetalogError, ValueError):
    """Raised inside the generated readers and writers' fast path; the public DecodeError or EncodeError is built
    by the reference codec, which names the field and offset."""


# ---- the log's record decoder and its indexes ----------------------------------------------------------------
class VarintError(MetalogError, ValueError):
    """A varint that runs past its buffer or is longer than its type allows."""


class RecordError(MetalogError):
    """A record of a batch that does not decode: its index in the batch, the byte position, why. RecordBatch
    turns it into a CorruptBatchError naming the file and the batch."""

    def __init__(self, index: int, pos: int, reason: str) -> None:
        super().__init__(reason)
        self.index, self.pos, self.reason = index, pos, reason


class IndexProblem(MetalogError, ValueError):
    """An index that fails its sanity check; it gets rebuilt from the log."""


# ---- the controller -----------------------------------------------------------------------------------------
class PlacementError(MetalogError):
    """Replicas cannot be placed; ``code`` is the Kafka error a request would get, ``kind`` Kafka's exception."""

    def __init__(self, reason: str, *, code: int, kind: str) -> None:
        self.reason = reason
        self.code = code
        self.kind = kind
        super().__init__(reason)


class Rejected(MetalogError):
    """A command refused with a Kafka error code: the controller answers with it (no exception reaches a caller)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class StorageError(MetalogError):
    """A log directory that cannot be formatted or read."""


class StateChangeQueueFull(MetalogError):
    """A broker's state-change queue stays full even after shrinking."""


# ---- benchmarks ---------------------------------------------------------------------------------------------
class NotComparable(MetalogError):  # noqa: N818  (a reason, not a failure)
    """An implementation disagrees with metalog's bytes or values: its figures would not mean anything."""


# ---- the metadata shell -------------------------------------------------------------------------------------------
class ExitShell(Exception):  # noqa: N818  (not a failure: the way out of the shell's loop)
    """``exit`` in ``metalog shell``: the shell ends. Never leaves the CLI's shell loop, which catches it."""
