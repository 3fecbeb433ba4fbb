"""``MetadataLoader.end_batch`` and its compiled twin (``metalog.state.compiled.publish.BatchPublish``): the same
publishes, batch by batch, over random histories in random batch shapes, with transactions begun, committed and
aborted, for loaders that build images and loaders that do not, started at the log's start or inside a transaction.
The twin's contract: it is given ``BatchPublishParts`` and reads the loader's public publish state only. A subscriber
that carries ``c_on_publish`` (``publish.pxd``'s ``ml_on_publish``) is told the twin's publishes in C, the pure
method's from Python: the same calls either way."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from types import MethodType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import Uuid, message_class
from metalog.codec.framing import decode_metadata_record, encode_metadata_record
from metalog.state import MetadataDelta, MetadataLoader
from metalog.state.delta import TopicDelta
from metalog.state.image import EMPTY, MetadataImage, PartitionRegistration, working_copy
from metalog.state.loader import END_BATCH, AbortedTransaction, OpenTransaction
from metalog.state.value_replay import NO_OP
from tests.state.histories import histories, replayable

compiled_end_batch = END_BATCH.compiled  # None where the pure twin runs
needs_twin = pytest.mark.skipif(compiled_end_batch is None, reason=f"the compiled publish is not loaded "
                                                                   f"({END_BATCH.why_not})")

MARKERS = [encode_metadata_record(message_class(name)(), 0)
           for name in ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")]


def _told(delta: MetadataDelta | None, image: MetadataImage | None) -> tuple[Any, ...]:
    """What an ``on_publish`` call was told, copied as it was at the call (the loader changes both afterwards)."""
    if delta is None:
        assert image is not None
        return ("replaced", working_copy(image))
    topics = {tid: (t.name, t.base, dict(t.partitions)) for tid, t in delta.topics.items()}
    fields = {name: getattr(delta, name) for name in MetadataDelta.__slots__ if name not in ("image", "topics")}
    copied = {name: type(value)(value) if isinstance(value, dict | set) else value for name, value in fields.items()}
    return ("delta", image is None, working_copy(delta.image), copied, topics, working_copy(delta.apply()))


# ml_on_publish's one field: int published(PyObject *subscriber, PyObject *delta, PyObject *image)
C_PUBLISHED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.py_object)
ON_PUBLISH_NAME = b"metalog.on_publish.v1"
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class CSubscriber:
    """An ``on_publish`` with a C entry (``c_on_publish``: a capsule around an ``ml_on_publish``, here a ctypes
    callback) that tells ``tell`` each call and how it came (``ways``: "c", or "python" through ``__call__``)."""

    def __init__(self, tell: Callable[[MetadataDelta | None, MetadataImage | None], object]) -> None:
        self.tell = tell
        self.ways: list[str] = []

        def published(subscriber: object, delta: MetadataDelta | None, image: MetadataImage | None) -> int:
            assert subscriber is self
            self.ways.append("c")
            tell(delta, image)
            return 0

        self._entry = C_PUBLISHED(published)  # (kept alive: the capsule points at them)
        self._struct = (ctypes.c_void_p * 1)(ctypes.cast(self._entry, ctypes.c_void_p).value)
        self.c_on_publish = _capsule_new(ctypes.addressof(self._struct), ON_PUBLISH_NAME, None)

    def __call__(self, delta: MetadataDelta | None, image: MetadataImage | None) -> None:
        self.ways.append("python")
        self.tell(delta, image)


class Publishes:
    """A loader and everything it told: each ``on_publish`` and ``on_abort`` call, and each batch end's result.
    ``c_entry``: its ``on_publish`` is a ``CSubscriber``."""

    def __init__(self, image: MetadataImage, transaction: OpenTransaction | None, images: bool, compiled: bool,
                 c_entry: bool = False) -> None:
        self.told: list[tuple[Any, ...]] = []
        self.aborts: list[AbortedTransaction] = []
        self.ending = False  # in end_batch (not in replay: a BeginTransactionRecord publishes what came before it)
        self.at_end: list[bool] = []  # for each told: whether at a batch end

        def tell(delta: MetadataDelta | None, image: MetadataImage | None) -> None:
            self.told.append(_told(delta, image))
            self.at_end.append(self.ending)

        self.subscriber = CSubscriber(tell) if c_entry else None
        self.loader = MetadataLoader(image, transaction=transaction, images=images, on_abort=self.aborts.append,
                                     on_publish=self.subscriber or tell)
        if not compiled:
            self.loader.end_batch = MethodType(MetadataLoader.end_batch, self.loader)  # type: ignore[method-assign]
        assert (type(self.loader.end_batch) is compiled_end_batch) is compiled

    def batch(self, base: int, values: list[bytes], last: int, ask: bool) -> tuple[Any, ...]:
        loader = self.loader
        loader.replay_values(values, base)
        self.ending = True
        result = loader.end_batch(last)
        self.ending = False
        seen = (result, loader.in_transaction, loader.state, loader.transaction_start, loader.offset,
                loader.clean_offset, loader.published_state.offset, loader.delta.offset)
        return (*seen, loader.image) if ask else seen


@st.composite
def with_markers(draw: Any) -> list[bytes]:
    """A random history with transaction markers put in at random places (those that cannot apply are dropped)."""
    values = draw(histories())
    for _ in range(draw(st.integers(0, 8))):
        values.insert(draw(st.integers(0, len(values))), draw(st.sampled_from(MARKERS)))
    return replayable(values, lambda value: decode_metadata_record(value).message)


def _start(values: list[bytes], start: int, images: bool) -> tuple[MetadataImage, OpenTransaction | None]:
    """The published image after ``values[:start]`` (one batch), and the transaction open there, if any: what a
    loader starting at a range of the parallel replay is given."""
    if start == 0:
        return EMPTY, None
    base = MetadataLoader(images=images)
    base.replay_values(values[:start], 0)
    base.end_batch(start - 1)
    if not base.in_transaction:
        return base.image, None
    assert base.transaction_start is not None
    return base.image, OpenTransaction(base.transaction_start, base.delta.apply())


@needs_twin
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=200, deadline=None)
@given(values=with_markers(), cuts=st.lists(st.integers(0, 5), min_size=1, max_size=8),
       start=st.integers(0, 12), images=st.booleans(), asked=st.lists(st.booleans(), min_size=1, max_size=5),
       c_entry=st.booleans())
def test_the_compiled_publish_is_the_pure_one(values: list[bytes], cuts: list[int], start: int, images: bool,
                                              asked: list[bool], c_entry: bool) -> None:
    """Batch by batch (empty batches are control batches), the twin and the pure method publish the same images,
    tell ``on_publish`` the same deltas over the same states and ``on_abort`` the same aborts, and leave the
    loader in the same state, whether the image is read after a batch or not. With a subscriber that has a C entry
    (``c_entry``), the twin tells it each delta it publishes itself there (with ``images=False``: every one at a
    batch end, the state replaced whole aside), and what it hands to the pure method from Python."""
    start = min(start, len(values))
    image, transaction = _start(values, start, images)
    pure, twin = (Publishes(image, transaction, images, compiled, c_entry) for compiled in (False, True))
    offset, n, sizes = start, 0, [*cuts, 2]
    while offset < len(values):
        size = sizes[n % len(sizes)]
        batch = values[offset:offset + size]
        last = offset + len(batch) - 1 if batch else max(pure.loader.offset, 0)
        ask = asked[n % len(asked)]
        assert twin.batch(offset, batch, last, ask) == pure.batch(offset, batch, last, ask)
        offset, n = offset + len(batch), n + 1
    assert twin.loader.image == pure.loader.image
    assert twin.told == pure.told
    assert twin.aborts == pure.aborts
    if twin.subscriber is not None and pure.subscriber is not None:
        assert pure.subscriber.ways == ["python"] * len(pure.told)
        assert len(twin.subscriber.ways) == len(twin.told)
        for told, at_end, way in zip(twin.told, twin.at_end, twin.subscriber.ways, strict=True):
            if images or told[0] == "replaced":  # the pure method's
                assert way == "python"
            elif at_end:  # (a BeginTransactionRecord's publish in replay may be either twin's)
                assert way == "c"


@needs_twin
def test_the_compiled_publish_names_the_cython_that_built_it() -> None:
    """As every compiled twin does: the status line (``core.twin_status``) reads it from the first twin of its core
    that loaded, which may be this one."""
    module = sys.modules[type(MetadataLoader().end_batch).__module__]
    assert module.CYTHON_VERSION and isinstance(module.CYTHON_VERSION, str)


@needs_twin
def test_the_c_entry_says_whether_a_transaction_is_open() -> None:
    """``BatchEnd.end_batch`` (what a compiled batch loop calls, here through ``c_end_batch``): 1 while a transaction
    is open (nothing published), else 0 with the batch published, as the loader's ``in_transaction`` says."""
    told: list[tuple[Any, ...]] = []
    loader = MetadataLoader(images=False, on_publish=lambda delta, image: told.append(_told(delta, image)))
    broker = message_class("RegisterBrokerRecord")(broker_id=1, broker_epoch=10, incarnation_id=Uuid.of(1, 1))
    loader.replay_values([encode_metadata_record(broker, 0), NO_OP, NO_OP], 0)
    assert loader.end_batch.c_end_batch(2) == 0  # type: ignore[attr-defined]
    assert [t[0] for t in told] == ["delta"] and not loader.in_transaction
    assert loader.image.offset == 2 and list(loader.image.brokers) == [1]
    loader.replay_values(MARKERS[:1], 3)
    assert loader.end_batch.c_end_batch(3) == 1  # type: ignore[attr-defined]
    assert loader.in_transaction and loader.image.offset == 2
    loader.replay_values(MARKERS[1:2], 4)
    assert loader.end_batch.c_end_batch(4) == 0  # type: ignore[attr-defined]
    assert not loader.in_transaction and loader.image.offset == 4


def _topic_history(topic: Uuid, changes: int) -> list[bytes]:
    """A topic of two partitions, then ``changes`` leader changes alternating between them, one per batch."""
    topic_record = message_class("TopicRecord")(name="t", topic_id=topic)
    partitions = [message_class("PartitionRecord")(partition_id=p, topic_id=topic, replicas=[1, 2], isr=[1, 2],
                                                   leader=1, leader_epoch=0, partition_epoch=0) for p in (0, 1)]
    moves = [message_class("PartitionChangeRecord")(partition_id=n % 2, topic_id=topic, leader=1 + n % 3 % 2)
             for n in range(changes)]
    return [encode_metadata_record(record, 0) for record in (topic_record, *partitions, *moves)]


@needs_twin
def test_a_topic_delta_a_subscriber_keeps_never_changes() -> None:
    """The compiled publish keeps each topic's delta, emptied, for the topic's next changes (the loader's
    ``kept_topic_deltas``) only where nothing else holds it: a subscriber that keeps the TopicDelta it was told (here
    every other one) finds it as it was told it, publishes later; one nobody kept is taken again."""
    topic = Uuid.of(7, 1)
    kept: list[tuple[TopicDelta, str, object, dict[int, Any]]] = []
    reused: list[bool] = []

    def on_publish(delta: MetadataDelta | None, image: MetadataImage | None) -> None:
        if delta is not None and topic in delta.topics:
            told = delta.topics[topic]
            reused.append(loader.kept_topic_deltas.get(topic) is told)
            if len(reused) % 2:
                kept.append((told, told.name, told.base, dict(told.partitions)))

    loader = MetadataLoader(images=False, on_publish=on_publish)
    values = _topic_history(topic, 12)
    loader.replay_values(values[:3], 0)
    loader.end_batch(2)
    for offset in range(3, len(values)):
        loader.replay_values(values[offset:offset + 1], offset)
        loader.end_batch(offset)
    assert len(kept) == 7
    for told, name, base, partitions in kept:
        assert (told.name, told.base, told.partitions) == (name, base, partitions) and partitions
    assert reused == [n >= 2 and n % 2 == 0 for n in range(13)]  # each one nobody kept, taken again
    assert loader.image.topics[topic].partitions[0].leader_epoch == 6
    quiet = MetadataLoader(images=False)  # one taken from the kept ones by a caller is theirs too
    for first, last in ((0, 2), (3, 3)):  # (a new topic's delta is not kept: its image is made at the publish)
        quiet.replay_values(values[first:last + 1], first)
        quiet.end_batch(last)
    mine = quiet.kept_topic_deltas[topic]
    base = mine.base
    quiet.replay_values(values[4:6], 4)
    quiet.end_batch(5)
    assert mine.partitions == {} and mine.base is base and quiet.kept_topic_deltas[topic] is not mine
    assert quiet.image.topics[topic].partitions[0].leader_epoch == 2


@needs_twin
def test_a_registration_someone_holds_is_never_filled_again() -> None:
    """The compiled publish keeps a registration it replaces in the working copy spare (the loader's
    ``spare_registrations``), for the next delta's copy of a registration to fill again, only where nothing else
    holds it: one held in an image read before, or taken from the spares by a caller, keeps its values."""
    topic = Uuid.of(7, 2)
    loader = MetadataLoader(images=False)
    values = _topic_history(topic, 16)
    loader.replay_values(values[:3], 0)
    loader.end_batch(2)
    held: list[tuple[PartitionRegistration, tuple[object, ...]]] = []
    spared = 0
    for offset in range(3, len(values)):
        loader.replay_values(values[offset:offset + 1], offset)
        loader.end_batch(offset)
        spared += len(loader.spare_registrations)
        if offset in (5, 9):  # the registrations of an image read now, and the spares a caller takes
            held += [(r, tuple(r)) for r in loader.image.topics[topic].partitions.values()]
            held += [(r, tuple(r)) for r in loader.spare_registrations]
    assert spared and len(held) > 4
    assert all(tuple(registration) == was for registration, was in held)
    assert loader.image.topics[topic].partitions[1].leader_epoch == 8
