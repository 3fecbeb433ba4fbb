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


class SchemaError(MetalogError):
    """A schema definition that breaks the rules of Kafka's message format."""
