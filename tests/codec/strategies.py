"""Hypothesis strategies derived from the schema model: message objects valid at a given version.

Fields the version lacks keep their defaults, null appears only where the version allows it, ints
cover their whole range, strings are any unicode (multi-byte included, bounded), arrays and byte
strings are short, nested structs recurse, and flexible structs sometimes carry unknown tagged
fields whose tags that version does not know.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

from metalog.codec import message_class, message_names
from metalog.codec.definitions import MESSAGES
from metalog.codec.reference import MAX_UVARINT, default_value, struct_class
from metalog.codec.schema import INT_RANGES, F, Message
from metalog.codec.uuid import Uuid

MAX_ITEMS = 3  # array elements
MAX_TEXT = 12  # characters in a string (up to 4 UTF-8 bytes each)
MAX_BYTES = 16


def all_message_versions() -> list[tuple[str, int]]:
    """Every (message name, version) the codec supports."""
    return [(name, v) for name in message_names() for v in message_class(name).VERSIONS]


def is_edge_version(name: str, version: int) -> bool:
    """A message's first or last version: the quick loop's share of every (message, version) case (the first
    version's layout and the newest, flexible or not)."""
    versions = message_class(name).VERSIONS
    return version in (min(versions), max(versions))


def message_objects(name: str, version: int) -> st.SearchStrategy[Any]:
    """Instances of the generated class for ``name`` that are valid at ``version``."""
    return _struct(name, name, version)


@cache
def _struct(message: str, struct: str, version: int) -> st.SearchStrategy[Any]:
    msg = MESSAGES[message]
    fields = msg.fields if struct == message else msg.structs[struct].fields
    flexible = version in msg.flexible_versions
    known_tags = set()
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields:
        if version not in f.valid:
            continue  # the generated constructor's default
        value = _field(msg, f, version)
        if flexible and version in f.tagged_versions:
            known_tags.add(f.tag)
            value = st.one_of(st.builds(default_value, st.just(msg), st.just(f)), value)
        kwargs[f.attr] = value
    if flexible:
        kwargs["unknown_tagged_fields"] = _unknown_tagged_fields(frozenset(known_tags))
    return st.builds(struct_class(msg, struct), **kwargs)


def _field(msg: Message, f: F, version: int) -> st.SearchStrategy[Any]:
    if f.is_array:
        value = st.lists(_single(msg, f.element, version), max_size=MAX_ITEMS)
    else:
        value = _single(msg, f.type, version)
    return st.none() | value if version in f.nullable_versions else value


def _single(msg: Message, typ: str, version: int) -> st.SearchStrategy[Any]:
    if typ in INT_RANGES:
        return st.integers(*INT_RANGES[typ])
    if typ == "bool":
        return st.booleans()
    if typ == "float64":
        return st.floats(allow_nan=False)  # NaN != NaN would defeat equality checks
    if typ == "uuid":
        return st.binary(min_size=16, max_size=16).map(Uuid)
    if typ == "string":
        return st.text(max_size=MAX_TEXT)
    if typ in ("bytes", "records"):
        return st.binary(max_size=MAX_BYTES)
    return _struct(msg.name, typ, version)


def _unknown_tagged_fields(known: frozenset[int]) -> st.SearchStrategy[list[tuple[int, bytes]] | None]:
    """None, or 1-3 (tag, data) pairs in ascending tag order (as decoding yields them back)."""
    tags = st.one_of(st.integers(0, 20), st.integers(0, MAX_UVARINT)).filter(lambda t: t not in known)
    pairs = st.lists(st.tuples(tags, st.binary(max_size=8)), min_size=1, max_size=3, unique_by=lambda p: p[0])
    return st.none() | pairs.map(sorted)
