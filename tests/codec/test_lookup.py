"""Finding generated classes by Kafka's names: ``message_class`` and ``struct_class``."""

from __future__ import annotations

import pytest

from metalog.codec import message_class, message_names, struct_class
from metalog.codec.definitions import MESSAGES


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_every_struct_of_every_message_resolves(name: str) -> None:
    msg = MESSAGES[name]
    assert struct_class(name, name) is message_class(name)
    for struct in msg.structs:
        cls = struct_class(name, struct)
        assert cls.__name__ == struct
        assert cls.STRUCT_PATH == (name, struct)


def test_unknown_struct_names_the_message() -> None:
    with pytest.raises(KeyError, match="RegisterBrokerRecord has no struct 'Nope'"):
        struct_class("RegisterBrokerRecord", "Nope")
    with pytest.raises(KeyError, match="has no struct 'KafkaStruct'"):  # imported by the module, not its struct
        struct_class("RegisterBrokerRecord", "KafkaStruct")


def test_unknown_message_suggests_close_names() -> None:
    with pytest.raises(KeyError, match="did you mean PartitionRecord"):
        message_class("PartitionRecrd")
    with pytest.raises(KeyError, match="unknown message"):
        struct_class("Nope", "Nope")
    assert "PartitionRecord" in message_names()
