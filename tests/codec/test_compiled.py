"""The compiled readers and the pure ones are the same codec: for every message and version, the same
valid, mutated and truncated bytes give equal fields of the same types, or the same error.

The compiled readers are generated from the same definitions as the pure modules
(``codegen.compiled``); the pure readers are the reference they are held to. These tests
skip where the compiled core does not run (``METALOG_PURE=1``, or no C compiler at install);
``METALOG_REQUIRE_COMPILED=1`` (CI's first run, see tests/conftest.py) makes that a failure instead.
"""

from __future__ import annotations

import mmap
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metalog.codec import KafkaStruct, core, message_class, struct_class
from metalog.codec.framing import decode_metadata_record, metadata_entries, metadata_readers
from metalog.codec.runtime import READER_ERRORS
from metalog.errors import DecodeError
from tests.codec.strategies import all_message_versions, message_objects
from tests.codec.test_properties import EDGE_VERSIONS, _mutate
from tests.conftest import load_codec_random
from tests.quick import examples

pytestmark = pytest.mark.skipif(not core.compiled_active(), reason=f"codec core: {core.status()}")
if core.compiled_active():
    from metalog.codec.compiled._info import run_entry, run_entry_into

PAIRS = all_message_versions()
IDS = [f"{name}-v{version}" for name, version in PAIRS]
DIFFERENTIAL = settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- what "the same" means --------------------------------------------------------------------
def assert_same(a: Any, b: Any, path: str = "", *, tuples: bool = False) -> None:
    """Equal values of the same types all the way down (floats bit for bit, so NaN counts too); with ``tuples``, a
    tuple in ``a`` where ``b`` has a list of values that are not structs (``read_entry_into``'s arrays)."""
    if tuples and type(a) is tuple and type(b) is list and not any(isinstance(x, KafkaStruct) for x in b):
        b = tuple(b)
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, KafkaStruct):
        for slot in type(a).__slots__:
            assert_same(getattr(a, slot), getattr(b, slot), f"{path}.{slot}", tuples=tuples)
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]", tuples=tuples)
    elif isinstance(a, float):
        assert struct.pack(">d", a) == struct.pack(">d", b), f"{path}: {a!r} != {b!r}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def outcome(read: Any, buf: Any, pos: int) -> tuple[str, Any]:
    """A reader's result, or the exception it raised (type and arguments)."""
    try:
        return "read", read(buf, pos)
    except (*READER_ERRORS, TypeError) as e:  # bytes it cannot read; a buffer that is no bytes-like object
        return "raised", (type(e), e.args)


def assert_readers_agree(cls: Any, version: int, raw: bytes, pos: int = 0) -> None:
    """The compiled and pure readers of ``cls`` at ``version`` over ``raw`` from ``pos``."""
    compiled = core.compiled_readers(cls)
    assert compiled is not None, f"{cls.__name__} has no compiled readers"
    pure = outcome(core.pure_readers(cls)[version], raw, pos)
    fast = outcome(compiled[version], raw, pos)
    assert fast[0] == pure[0], f"compiled {fast[1]!r}, pure {pure[1]!r}, input {raw.hex()} from {pos}"
    if fast[0] == "raised":
        assert fast[1] == pure[1], f"input {raw.hex()} from {pos}"
    else:
        assert_same(fast[1], pure[1], cls.__name__)
    assert_entry_agrees(cls, version, raw, pos, pure)


def assert_entry_agrees(cls: Any, version: int, raw: Any, pos: int, pure: tuple[str, Any]) -> None:
    """The reader's C entry point (what the compiled replay calls) over the same bytes: the pure reader's object
    and end where that reads them, a refusal (None) where it raises."""
    if type(raw) is not bytes or not 0 <= pos <= len(raw):
        return  # (the C entry reads a pointer and a length; the Python entry takes these to the pure reader)
    entry = core.compiled_entry(cls, version, core.compiled_readers(cls)[version])  # type: ignore[index]
    assert entry is not None, f"{cls.__name__} v{version} has no C entry point"
    got = run_entry(entry, raw, pos)
    into = run_entry_into(entry, lambda: stale(cls), raw, pos)
    if pure[0] == "raised":
        assert got is None, f"the C entry read {got!r} where the pure reader raised, input {raw.hex()} from {pos}"
        assert into is None, f"the C entry read {into!r} into an object where the pure reader raised"
    else:
        assert got is not None, f"the C entry refused what the pure reader read, input {raw.hex()} from {pos}"
        assert got[1] == pure[1][1], f"input {raw.hex()} from {pos}"
        assert_same(got[0], pure[1][0], cls.__name__)
        assert into is not None and into[1] == pure[1][1], f"input {raw.hex()} from {pos}"
        assert_same(into[0], pure[1][0], cls.__name__, tuples=True)  # every field read again: none stale
        reader = core.compiled_readers(cls)[version]  # type: ignore[index]
        assert into[2] == sys.modules[reader.__module__].direct_stores(), "the object given was not the one filled"


STALE = object()  # a field's value an entry reading into an object must replace


def stale(cls: Any) -> Any:
    """An instance of ``cls`` with every field STALE: what ``read_entry_into`` fills again."""
    obj = object.__new__(cls)
    for slot in cls.__slots__:
        setattr(obj, slot, STALE)
    return obj


@contextmanager
def pure_core(cls: Any) -> Iterator[None]:
    """``cls.decode`` with its pure readers, for the length of the block."""
    compiled = cls.READERS
    cls.READERS = core.pure_readers(cls)
    try:
        yield
    finally:
        cls.READERS = compiled


def decode_outcome(cls: Any, raw: Any, version: int) -> tuple[str, Any]:
    try:
        return "ok", cls.decode(raw, version)
    except DecodeError as e:
        return "error", (str(e), e.reason, e.message, e.version, e.field, e.offset)


def assert_decode_agrees(cls: Any, version: int, raw: Any) -> None:
    """``cls.decode`` gives the same object, or the same DecodeError (text, field, offset), on both cores."""
    fast = decode_outcome(cls, raw, version)
    with pure_core(cls):
        pure = decode_outcome(cls, raw, version)
    assert fast[0] == pure[0], f"compiled {fast[1]!r}, pure {pure[1]!r}, input {bytes(raw).hex()}"
    if fast[0] == "error":
        assert fast[1] == pure[1]
    else:
        assert_same(fast[1], pure[1], cls.__name__)


# ---- every message and version ----------------------------------------------------------------
def test_every_message_reads_with_compiled_readers() -> None:
    """Every generated class, message and nested struct, at every version, has a compiled reader."""
    assert core.load_all() == {}
    for name, version in PAIRS:
        cls = message_class(name)
        assert core.is_compiled(cls), name
        assert type(cls.READERS[version]).__name__ == "builtin_function_or_method", (name, version)
        assert set(cls.READERS) == set(core.pure_readers(cls)) == set(cls.VERSIONS)


@EDGE_VERSIONS
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_compiled_and_pure_readers_agree(name: str, version: int) -> None:
    cls = message_class(name)

    @DIFFERENTIAL
    @given(message_objects(name, version), st.data())
    def check(obj: Any, data: st.DataObject) -> None:
        raw = obj.encode(version)
        assert_readers_agree(cls, version, raw)
        fast, end = core.compiled_readers(cls)[version](raw, 0)
        assert end == len(raw)
        assert_same(fast, obj, name)  # and both equal what was encoded
        # mid-buffer, with bytes either side: positions are the input's, and what follows is not read
        prefix = data.draw(st.binary(max_size=5), label="prefix")
        assert_readers_agree(cls, version, prefix + raw + data.draw(st.binary(max_size=5), label="suffix"),
                             len(prefix))
        for cut in {0, len(raw) // 2, max(0, len(raw) - 1)}:  # truncated
            assert_readers_agree(cls, version, raw[:cut])
        for _ in range(3):  # mutated: flips, cuts, insertions, deletions, length and varint bytes
            assert_readers_agree(cls, version, _mutate(raw, data))
        assert_decode_agrees(cls, version, _mutate(raw, data))  # the whole DecodeError, once per example

    check()


@EDGE_VERSIONS
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_compiled_and_pure_readers_agree_on_random_bytes(name: str, version: int) -> None:
    cls = message_class(name)

    @settings(max_examples=examples(30), deadline=None)
    @given(st.binary(max_size=48))
    def check(raw: bytes) -> None:
        assert_readers_agree(cls, version, raw)

    check()


def test_kafka_written_messages_read_the_same() -> None:
    """Every message of tests/data/kafka/codec-random.jsonl (bytes from Kafka's serializers) reads the same."""
    for case in load_codec_random():
        cls = message_class(case["name"])
        raw = bytes.fromhex(case["hex"])
        assert_readers_agree(cls, case["version"], raw)
        assert_decode_agrees(cls, case["version"], raw)


# ---- buffers ------------------------------------------------------------------------------------
def _buffers(raw: bytes) -> Iterator[tuple[str, Any]]:
    yield "bytes", raw
    yield "bytearray", bytearray(raw)
    yield "memoryview", memoryview(raw)
    yield "memoryview slice", memoryview(b"\x00" + raw + b"\x00")[1:-1]
    m = mmap.mmap(-1, max(1, len(raw)))
    m[:len(raw)] = raw
    yield "mmap", m if len(raw) else b""


@pytest.mark.parametrize(("name", "version"), [("PartitionRecord", 1), ("UpdateMetadataRequest", 8),
                                               ("RegisterBrokerRecord", 3), ("VotersRecord", 0)])
def test_every_buffer_kind_reads_the_same(name: str, version: int) -> None:
    """bytes, bytearray, memoryview (slices too) and mmap: anything with the buffer protocol."""

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(message_objects(name, version))
    def check(obj: Any) -> None:
        raw = obj.encode(version)
        cls = type(obj)
        for kind, buf in _buffers(raw):
            fast, end = core.compiled_readers(cls)[version](buf, 0)
            assert end == len(raw), kind
            assert_same(fast, obj, kind)
            assert_decode_agrees(cls, version, buf)

    check()


def test_buffers_the_compiled_reader_does_not_read_go_to_the_pure_reader() -> None:
    """A memoryview of another item format, or something without the buffer protocol, is the pure path's."""
    cls = message_class("PartitionChangeRecord")
    raw = cls(partition_id=1).encode(1)
    padded = raw + b"\x00" * (-len(raw) % 4)
    for odd in (memoryview(padded).cast("i"), list(raw), "text"):
        assert_readers_agree(cls, 1, odd)  # type: ignore[arg-type]


def test_hostile_lengths_are_refused_before_anything_is_allocated() -> None:
    """A count of 2**31-1 elements (or a compact 2**32-2) with a few bytes behind it is refused at once, on
    both paths, with the same error (Kafka's readers check a length against what remains, too)."""
    cls = message_class("UpdateMetadataRequest")
    classic = struct.pack(">iiqi", 1, 3, 42, 0x7FFFFFFF) + b"\x00" * 8  # v5: TopicStates, an int32 count
    flexible = struct.pack(">i?iq", 1, False, 3, 42) + b"\xfe\xff\xff\xff\x0f" + b"\x00" * 8  # v8: compact
    for version, raw in ((5, classic), (8, flexible)):
        assert_readers_agree(cls, version, raw)
        assert_decode_agrees(cls, version, raw)
        with pytest.raises(DecodeError, match="TopicStates"):
            cls.decode(raw, version)


# ---- the metadata log's dispatch table and the portable stores --------------------------------
def test_metadata_readers_are_the_compiled_readers() -> None:
    """framing.metadata_readers() (the replay's dispatch table) hands out the compiled readers."""
    readers = metadata_readers()
    pr = message_class("PartitionRecord")
    assert readers[pr.API_KEY << 8 | 1] is pr.READERS[1]
    value = b"\x01" + bytes([pr.API_KEY, 1]) + pr(partition_id=4).encode(1)
    obj, end = readers[pr.API_KEY << 8 | 1](value, 3)
    assert end == len(value)
    assert_same(obj, decode_metadata_record(value).message)


def test_metadata_entries_are_the_compiled_readers_c_entry_points() -> None:
    """framing.metadata_entries() (the compiled replay's C dispatch) has a C entry point for every reader of
    metadata_readers() that is a compiled one, and none for a reader that is not (a pure reader, another version's)."""
    readers, entries = metadata_readers(), metadata_entries()
    assert set(entries) == set(readers)
    pr = message_class("PartitionRecord")
    value = pr(partition_id=4, replicas=[1, 2]).encode(1)
    obj, end = run_entry(entries[pr.API_KEY << 8 | 1], b"\x01\x03\x01" + value, 3)
    assert end == len(value) + 3
    assert_same(obj, pr.decode(value, 1))
    assert core.compiled_entry(pr, 1, readers[pr.API_KEY << 8 | 1]) is entries[pr.API_KEY << 8 | 1]
    assert core.compiled_entry(pr, 1, core.pure_readers(pr)[1]) is None
    assert core.compiled_entry(pr, 0, readers[pr.API_KEY << 8 | 1]) is None  # another version's reader


def test_an_entry_reads_into_an_object_only_its_caller_holds() -> None:
    """``read_entry_into`` fills the object it is given again only where nothing else holds that object, and where
    it is of the class read; otherwise it makes a new one and leaves the object given as it was."""
    entries, pr = metadata_entries(), message_class("PartitionRecord")
    value = b"\x01\x03\x01" + pr(partition_id=4, replicas=[1, 2], isr=[2]).encode(1)
    entry = entries[pr.API_KEY << 8 | 1]
    expected = pr.decode(value[3:], 1)
    held = stale(pr)
    for make, reused in ((lambda: stale(pr), True), (lambda: held, False),
                         (lambda: stale(message_class("ConfigRecord")), False)):
        obj, end, same = run_entry_into(entry, make, value, 3)
        assert same is reused and end == len(value)
        assert_same(obj, expected, "PartitionRecord", tuples=True)
        assert type(obj.replicas) is tuple and obj.replicas == (1, 2)
        assert all(getattr(held, slot) is STALE for slot in pr.__slots__)


def test_direct_and_portable_slot_stores_build_the_same_objects() -> None:
    """The readers that store straight into slots and those that go through setattr build the same objects."""
    assert core.direct_stores() is (sys.implementation.name == "cpython")
    cases = load_codec_random()
    direct = [message_class(c["name"]).decode(bytes.fromhex(c["hex"]), c["version"]) for c in cases]
    try:
        assert core.direct_stores(False) is False
        portable = [message_class(c["name"]).decode(bytes.fromhex(c["hex"]), c["version"]) for c in cases]
    finally:
        core.direct_stores(True)
    for a, b in zip(direct, portable, strict=True):
        assert_same(a, b)


def test_an_unexpected_slot_layout_falls_back_to_portable_stores() -> None:
    """A class whose slots are not where the generator expects them (here: a subclass with one more slot)
    is filled through setattr, never by offset."""
    script = """
from metalog.codec.messages import partition_record as pure
class Wider(pure.PartitionRecord):
    __slots__ = ('aaa_extra',)
pure.PartitionRecord = Wider
from metalog.codec import core, message_class
cls = message_class('PartitionRecord')
assert cls is Wider
assert core.direct_stores() is False, core.status()
assert 'portable slot stores' in core.status()
obj = Wider.decode(pure.PartitionRecord(partition_id=5, replicas=[1, 2]).encode(1), 1)
assert type(obj) is Wider and obj.partition_id == 5 and obj.replicas == [1, 2]
print('ok')
"""
    env = {k: v for k, v in os.environ.items() if k != core.PURE_ENV}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_nested_struct_classes_have_compiled_readers() -> None:
    """A nested struct's own readers (``cls.READERS``, as the pure module has them) are compiled too."""
    cls = struct_class("UpdateMetadataRequest", "UpdateMetadataBroker")
    endpoint = struct_class("UpdateMetadataRequest", "UpdateMetadataEndpoint")
    assert core.is_compiled(cls)
    obj = cls(id=3, rack="r1", endpoints=[endpoint(port=9092, host="h", listener="L", security_protocol=1)])
    for version in (0, 5, 8):
        out = bytearray()
        cls.WRITERS[version](obj, out)
        assert_readers_agree(cls, version, bytes(out))
