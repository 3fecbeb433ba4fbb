"""Kafka's binary message format, generated from metalog's own schema definitions.

    >>> from metalog.codec.messages import PartitionRecord
    >>> PartitionRecord.decode(PartitionRecord(partition_id=3).encode(1), 1).partition_id
    3

Every message class is importable by name from ``metalog.codec.messages``, its fields typed; ``message_class``
looks one up by a name known only at run time (a command line's, a file's).
"""

from __future__ import annotations

import difflib
import importlib

from metalog.codec import core
from metalog.codec.messages import MODULES
from metalog.codec.runtime import ApiMessage, KafkaStruct
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED, ZERO, Uuid
from metalog.errors import CodecError, DecodeError, EncodeError, UnknownMessageError

__all__ = [
    "ApiMessage", "KafkaStruct", "Uuid", "ZERO", "MIGRATING", "UNASSIGNED", "LOST",
    "CodecError", "DecodeError", "EncodeError", "UnknownMessageError", "message_class", "message_names",
    "struct_class",
]


def message_names() -> list[str]:
    """Every message metalog knows, by Kafka's spec name."""
    return sorted(MODULES)


def message_class(name: str) -> type[ApiMessage]:
    """The generated class for a message spec name, e.g. ``"PartitionRecord"`` (the class
    ``from metalog.codec.messages import PartitionRecord`` gives, which a type checker knows field by field).

    An unknown name raises UnknownMessageError naming it with the closest known names, if any are close.
    """
    module = MODULES.get(name) if isinstance(name, str) else None
    if module is None:
        close = difflib.get_close_matches(str(name), MODULES, n=3)
        every = f"`metalog codec list` or metalog.codec.message_names() gives all {len(MODULES)}"
        hint = f"; did you mean {' or '.join(close)}? (the closest; {every})" if close else f" ({every})"
        raise UnknownMessageError(f"unknown message {name!r}{hint}")
    cls: type[ApiMessage] = getattr(core.message_module(module), name)  # with the compiled readers where they run
    return cls


def struct_class(message: str, struct: str) -> type[KafkaStruct]:
    """The generated class of a struct nested in a message, e.g. ``("RegisterBrokerRecord", "BrokerEndpoint")``.

    Nested structs live in their message's module; the message's own name gives the message class.
    """
    top = message_class(message)
    if struct == message:
        return top
    cls = getattr(importlib.import_module(top.__module__), struct, None)
    if getattr(cls, "STRUCT_PATH", None) != (message, struct):  # not a module's other names
        from metalog.codec.definitions import MESSAGES

        known = ", ".join(sorted(MESSAGES[message].structs)) or "none"
        raise UnknownMessageError(f"{message} has no struct {struct!r} (its structs: {known})")
    assert isinstance(cls, type) and issubclass(cls, KafkaStruct)
    return cls
