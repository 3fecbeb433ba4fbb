"""Finding generated classes by Kafka's names: ``message_class`` and ``struct_class``."""

from __future__ import annotations

import pytest

from metalog.codec import UnknownMessageError, message_class, message_names, struct_class
from metalog.codec.definitions import MESSAGES
from metalog.codec.framing import metadata_record_class, request_header_version, response_header_version
from metalog.errors import CodecError, MetalogError


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_every_struct_of_every_message_resolves(name: str) -> None:
    msg = MESSAGES[name]
    assert struct_class(name, name) is message_class(name)
    for struct in msg.structs:
        cls = struct_class(name, struct)
        assert cls.__name__ == struct
        assert (name, struct) == cls.STRUCT_PATH


def test_unknown_struct_names_the_message_and_its_structs() -> None:
    with pytest.raises(UnknownMessageError) as e:
        struct_class("RegisterBrokerRecord", "Nope")
    assert str(e.value) == "RegisterBrokerRecord has no struct 'Nope' (its structs: BrokerEndpoint, BrokerFeature)"
    with pytest.raises(KeyError, match="has no struct 'KafkaStruct'"):  # imported by the module, not its struct
        struct_class("RegisterBrokerRecord", "KafkaStruct")


def test_unknown_message_suggests_close_names() -> None:
    with pytest.raises(KeyError, match="did you mean PartitionRecord"):
        message_class("PartitionRecrd")
    with pytest.raises(KeyError, match="unknown message"):
        struct_class("Nope", "Nope")
    assert "PartitionRecord" in message_names()


def test_unknown_message_is_a_metalog_error_naming_it_and_how_many_are_known() -> None:
    with pytest.raises(MetalogError) as e:
        message_class("Nope")
    assert isinstance(e.value, CodecError) and isinstance(e.value, KeyError)  # `except KeyError` still catches it
    n = len(message_names())
    every = f"`metalog codec list` or metalog.codec.message_names() gives all {n}"
    assert str(e.value) == f"unknown message 'Nope' ({every})"


def test_unknown_message_lists_the_closest_names_and_says_they_are_the_closest() -> None:
    with pytest.raises(UnknownMessageError) as e:
        message_class("PartitionRecrd")
    text = str(e.value)
    assert text.startswith("unknown message 'PartitionRecrd'; did you mean PartitionRecord or ")
    assert "(the closest; `metalog codec list`" in text and not text.startswith("'")


@pytest.mark.parametrize("name", [None, 3, ""])
def test_a_message_name_that_is_not_a_name(name: object) -> None:
    with pytest.raises(UnknownMessageError, match=f"unknown message {name!r}"):
        message_class(name)  # type: ignore[arg-type]


def test_unknown_api_keys_are_metalog_errors_listing_the_known_ones() -> None:
    with pytest.raises(UnknownMessageError, match=r"unknown metadata record type 99 \(known api keys: 0-5, 7-"):
        metadata_record_class(99)
    assert metadata_record_class(0).NAME == "RegisterBrokerRecord"
    with pytest.raises(UnknownMessageError, match=r"no request with api key 999 is defined \(known: 3 Metadata"):
        request_header_version(999, 0)
    with pytest.raises(UnknownMessageError, match="no response with api key 999 is defined"):
        response_header_version(999, 0)


@pytest.mark.parametrize("use", ["encode", "decode", "to_json", "from_json"])
def test_an_unknown_version_is_a_codec_error_naming_the_valid_ones(use: str) -> None:
    cls = message_class("FeatureLevelRecord")
    calls = {"encode": lambda: cls().encode(9), "decode": lambda: cls.decode(b"", 9),
             "to_json": lambda: cls().to_json(9), "from_json": lambda: cls.from_json({}, 9)}
    with pytest.raises(CodecError, match=r"unsupported version 9 \(valid: 0"):
        calls[use]()
