"""Kafka's binary message format, generated from metalog's own schema definitions.

    >>> from metalog.codec import message_class
    >>> PartitionRecord = message_class("PartitionRecord")
    >>> PartitionRecord.decode(PartitionRecord(partition_id=3).encode(1), 1).partition_id
    3
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

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


def message_class(name: str) -> Any:
    """The generated class for a message spec name, e.g. ``"PartitionRecord"``.

    An unknown name raises UnknownMessageError naming it with the closest known names, if any are close.
    """
    module = MODULES.get(name) if isinstance(name, str) else None
    if module is None:
        close = difflib.get_close_matches(str(name), MODULES, n=3)
        every = f"`metalog codec list` or metalog.codec.message_names() gives all {len(MODULES)}"
        hint = f"; did you mean {' or '.join(close)}? (the closest; {every})" if close else f" ({every})"
        raise UnknownMessageError(f"unknown message {name!r}{hint}")
    return getattr(core.message_module(module), name)  # with the compiled readers where they run


def struct_class(message: str, struct: str) -> Any:
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
    return cls
