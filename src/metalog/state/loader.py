"""MetadataLoader: Kafka's loader over MetadataDelta, with one commit per batch.

Follows ``MetadataBatchLoader`` (``loadBatch``, ``replay``, ``maybeFlushBatches``) and ``MetadataLoader``
(``handleCommit``, ``handleLoadSnapshot``) in Kafka's ``metadata/src/main/java/org/apache/kafka/image/loader``.
``image`` is the state the loader last *published*; records loaded since wait in a delta. The published
points of a log are exactly:

- the end of every batch (data or control) after which no transaction is open: ``end_batch``;
- inside a batch, just before a BeginTransactionRecord: what came before it, at the offset before it
  (Kafka emits its delta there when the Begin is not the batch's first record; when it is, the batch
  before already published that same state);
- a snapshot, at its last contained offset: ``load_snapshot``.

Nothing is published while a transaction is open: its records become visible together at the end of the
batch holding its EndTransactionRecord. One deliberate difference from Kafka: an AbortTransactionRecord
drops the transaction's records at once, so records after it in the same batch apply without them (Kafka's
batch loader keeps the aborted records in its delta when more records follow the abort in that batch; its
controller never writes such a batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from types import MethodType
from typing import Any

from metalog.codec import core
from metalog.codec.framing import FAST_PATH_MISSES, FRAME_VERSION, decode_metadata_record
from metalog.codec.uuid import Uuid
from metalog.errors import DecodeError, ReplayError
from metalog.state.delta import MetadataDelta, TopicDelta, located
from metalog.state.enums import record_type_name
from metalog.state.image import EMPTY, MetadataImage, PartitionRegistration, TopicImage, set_working, working_copy
from metalog.state.publish import BatchPublishParts
from metalog.state.rules import TRANSACTION_MARKERS, dispatch
from metalog.state.value_replay import NO_OP, value_replay_parts

_BEGIN, _END, _ABORT = "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"


class TransactionState(Enum):
    """MetadataBatchLoader.TransactionState."""

    NO_TRANSACTION = "NO_TRANSACTION"
    STARTED_TRANSACTION = "STARTED_TRANSACTION"  # a BeginTransactionRecord was the last record
    CONTINUED_TRANSACTION = "CONTINUED_TRANSACTION"  # records followed the BeginTransactionRecord
    ENDED_TRANSACTION = "ENDED_TRANSACTION"  # an EndTransactionRecord was the last record
    ABORTED_TRANSACTION = "ABORTED_TRANSACTION"  # an AbortTransactionRecord was the last record


NO_TRANSACTION = TransactionState.NO_TRANSACTION
STARTED = TransactionState.STARTED_TRANSACTION
CONTINUED = TransactionState.CONTINUED_TRANSACTION
ENDED = TransactionState.ENDED_TRANSACTION
ABORTED = TransactionState.ABORTED_TRANSACTION
OPEN = frozenset({STARTED, CONTINUED})


@dataclass(frozen=True)
class OpenTransaction:
    """A transaction open where a loader starts: its BeginTransactionRecord's offset, and ``pending``, the
    published image with the transaction's records so far applied (what the parallel replay computes)."""

    begin_offset: int
    pending: MetadataImage


@dataclass(frozen=True)
class AbortedTransaction:
    """What ``on_abort`` is told: the AbortTransactionRecord's offset and its transaction's Begin offset."""

    abort_offset: int
    begin_offset: int


class LoaderPosition:
    """The two fields of a loader that its compiled record replay (``metalog.state.value_replay``) writes and reads
    per record, as slots: ``offset`` (the last record loaded) and ``delta`` (the MetadataDelta records load into).
    A slot is stored at a fixed place, which the twin writes as a pointer; in Python it reads and writes as fast as
    an attribute of the instance's dictionary."""

    __slots__ = ("offset", "delta")

    offset: int
    delta: MetadataDelta


class MetadataLoader(LoaderPosition):
    """Loads a log batch by batch; ``image`` is the last published state (what a reader of the log sees).

    Batch-level entry points: ``load_batch`` (a whole batch), or ``replay``/``replay_value`` per record
    followed by ``end_batch`` at the batch's end. Replaying many batches record by record and calling
    ``end_batch`` only after the last one gives the same published state at that end (replay's fused path):
    the state at a batch end depends on no earlier batch end.

    ``on_publish(delta, image)`` is told of each image published from loaded records, with the delta that made
    it from the image before (``delta.image``), as Kafka's publishers are (``onMetadataUpdate``); a snapshot
    replaces the state whole and is told with None. A publish that only moves the offset changes nothing and
    is not told: nothing loaded since the last publish, or only records that change nothing (NoOpRecords: a
    ``MetadataDelta.changes_nothing``). ``on_abort`` is told of each aborted transaction.

    ``images=False``: the loader builds no image per publish (building one copies every map a batch touched:
    most of the cost of publishing at every batch end, as the analysis does). It keeps the published state as
    a working copy of its own (``image.working_copy``), changed in place by each delta (``MetadataDelta.apply_to``),
    and builds an image only where ``image`` is read. ``on_publish(delta, None)`` is then told *before* the
    delta is applied, so ``delta.image`` holds the published state it changes (valid during the call only); a
    state replaced whole (a snapshot, or the first publish of a loader started inside a transaction) is told
    ``(None, image)``. Kafka's publishers work the same way from the delta and the image before it
    (ControllerMetadataMetricsPublisher's ControllerMetricsChanges).

    The loader's publish state is public for its compiled twins (``metalog.state.value_replay``,
    ``metalog.state.publish``), which read and write it as the methods here do; a caller reads ``image``, ``state``
    and ``in_transaction`` instead: ``published_state`` (the state the delta is made over: the image, or with
    ``images=False`` the working copy), ``published_image`` (it as an image; None: not built yet), ``marker_state``
    (the transaction state after the last marker: see ``state``) and ``clean_offset`` (records after it are in the
    delta, not yet published). ``kept_topic_deltas`` is the twins' own: the compiled publish keeps there, emptied,
    each TopicDelta that nothing but the delta held, and the compiled record replay takes one again (reference
    count 1: nothing else holds it) for the next change of that topic over the same TopicImage, instead of making
    one per topic per publish; a subscriber that keeps a TopicDelta keeps it unchanged, as it was told it. In
    ``spare_registrations`` the compiled publish puts the registrations it replaces in the working copy that nothing
    else holds, and the compiled record replay fills one of them (again only where nothing else holds it) where it
    copies a registration into the delta, instead of making one and freeing another per change.
    """

    # the fields the compiled publish reads and writes per batch, as slots (``metalog.state.compiled.publish``: read
    # at their places, not looked up by name); the rest in the instance's dictionary
    __slots__ = ("marker_state", "clean_offset", "published_state", "published_image", "images", "on_publish",
                 "__dict__", "__weakref__")

    def __init__(self, image: MetadataImage = EMPTY, *, transaction: OpenTransaction | None = None,
                 on_abort: Callable[[AbortedTransaction], object] | None = None,
                 on_publish: Callable[[MetadataDelta | None, MetadataImage | None], object] | None = None,
                 images: bool = True) -> None:
        self._dispatch = dispatch()
        self.images = images
        self.published_state = image if images else working_copy(image)  # the state the delta is made over
        self.published_image: MetadataImage | None = image  # the published state as an image (None: not built)
        self.on_abort = on_abort
        self.on_publish = on_publish
        self.transaction_start: int | None = None  # the open transaction's BeginTransactionRecord
        self.offset = image.offset  # the last record loaded (a control batch holds none)
        self.marker_state = NO_TRANSACTION  # the state after the last transaction marker (see ``state``)
        self._marker = image.offset  # the offset of the last transaction marker
        self.clean_offset = image.offset  # records after this offset are in the delta, not yet published
        self.delta = MetadataDelta(self.published_state)  # the records loaded since the last publish
        # the compiled twins' TopicDeltas kept from one publish to the next delta, emptied (``kept_topic_deltas``)
        self.kept_topic_deltas: dict[Uuid, TopicDelta] = {}
        # and the registrations a publish replaced in the working copy, for the next delta's copies to fill again
        self.spare_registrations: list[PartitionRegistration] = []
        compiled_value_replay = VALUE_REPLAY.compiled
        if compiled_value_replay is not None:
            self.replay_value = compiled_value_replay(  # type: ignore[method-assign]
                self, MethodType(MetadataLoader.replay_value, self), value_replay_parts())
            self.replay_values = self.replay_value.replay_values  # type: ignore[method-assign,attr-defined]
        compiled_end_batch = END_BATCH.compiled
        if compiled_end_batch is not None:
            self.end_batch = compiled_end_batch(  # type: ignore[method-assign]
                self, MethodType(MetadataLoader.end_batch, self), PUBLISH_PARTS)
        if transaction is not None:
            pending = transaction.pending
            self.delta = MetadataDelta(pending)
            self.transaction_start = transaction.begin_offset
            self.offset = max(image.offset, pending.offset, transaction.begin_offset)
            self._marker = transaction.begin_offset
            self.marker_state = STARTED  # CONTINUED as soon as a record followed the Begin (``state``)

    @property
    def image(self) -> MetadataImage:
        """The last published state. With ``images=False`` it is built here, from the working copy, when it is
        first read after a publish (a copy of every map: ask only where an image is needed)."""
        image = self.published_image
        if image is None:
            image = self.published_image = working_copy(self.published_state)
        return image

    # ---- the transaction state ---------------------------------------------------------------------------
    @property
    def state(self) -> TransactionState:
        """Kafka's transaction state after the last record loaded. A record after a marker moves STARTED to
        CONTINUED and ENDED or ABORTED to NO_TRANSACTION, as in Kafka's ``replay``; derived here from the
        offsets, so the replay loop pays nothing for it."""
        s = self.marker_state
        if self.offset > self._marker:
            if s is STARTED:
                return CONTINUED
            if s is ENDED or s is ABORTED:
                return NO_TRANSACTION
        return s

    @property
    def in_transaction(self) -> bool:
        """A transaction is open: its records are not in ``image``."""
        return self.marker_state is STARTED  # (never CONTINUED: ``state`` derives it)

    # ---- records of the current batch ---------------------------------------------------------------------
    def replay(self, record: Any, offset: int) -> None:
        """Load one decoded record of the current batch."""
        name = record.NAME
        if name in TRANSACTION_MARKERS:
            self.load_marker(name, offset)
        else:
            self.delta.replay(record, offset)
        self.offset = offset

    def replay_value(self, value: bytes | None, offset: int) -> None:
        """Decode and load one record value as the log stores it: ``replay`` without the detours, for
        replay's hot loop. The generated reader and the rule are found in one lookup by the value's
        apiKey and version bytes; anything unusual goes the checked way (raising DecodeError)."""
        if value == NO_OP:  # most of a quiet cluster's log; it changes nothing
            self.offset = offset
            return
        try:
            reader, rule = self._dispatch[value[1] << 8 | value[2]]  # type: ignore[index]
            record, end = reader(value, 3)  # type: ignore[arg-type]
            if end != len(value) or value[0] != FRAME_VERSION:  # type: ignore[arg-type,index]
                raise DecodeError("not exactly one record")
        except FAST_PATH_MISSES:  # the checked path raises the precise error, or reads a rare form
            self.replay(decode_metadata_record(value).message, offset)  # type: ignore[arg-type]  # None: TypeError
            return
        except TypeError:
            if value is None:
                raise DecodeError("the record has no value") from None
            raise
        if rule is None:
            self.load_marker(record.NAME, offset)
        else:
            try:
                rule(self.delta, record)
            except ReplayError as e:
                raise located(e, offset, record) from None
        self.offset = offset

    def replay_values(self, values: Sequence[bytes | None], base: int) -> None:
        """``replay_value`` for each of a batch's record values in order, the first at offset ``base``."""
        replay_value = self.replay_value
        for offset, value in enumerate(values, base):
            replay_value(value, offset)

    def load_marker(self, name: str, offset: int) -> None:
        """Kafka's ``replay`` for the three transaction markers (by message name) at ``offset``; an illegal one
        raises and changes nothing. ``offset`` is not moved here: the caller does that."""
        state = self.state
        if name == _BEGIN:
            if state in OPEN:
                raise ReplayError(f"a transaction is already open (since offset {self.transaction_start})",
                                  offset=offset, record=record_type_name(name))
            # Kafka's loadBatch emits the delta when a transaction starts: a batch end at the record before it (on
            # the compiled publish where that runs; the marker state is set below)
            self.end_batch(offset - 1)
            self.clean_offset = offset
            self.marker_state, self.transaction_start = STARTED, offset
        elif state not in OPEN:
            raise ReplayError("no transaction is open", offset=offset, record=record_type_name(name))
        elif name == _END:
            self.marker_state, self.transaction_start = ENDED, None
        else:
            begin = self.transaction_start
            self.delta = MetadataDelta(self.published_state)  # the transaction's records are dropped
            self.clean_offset = offset
            self.marker_state, self.transaction_start = ABORTED, None
            if self.on_abort is not None:
                self.on_abort(AbortedTransaction(offset, begin))  # type: ignore[arg-type]
        self._marker = offset

    # ---- publishing ---------------------------------------------------------------------------------------
    def end_batch(self, last_offset: int) -> MetadataImage | None:
        """The batch ending at ``last_offset`` is loaded: Kafka's ``maybeFlushBatches`` after one batch.
        Publishes and returns the new image unless a transaction is open (then None: nothing is published);
        with ``images=False`` it returns None either way (``in_transaction`` says which, ``image`` builds it)."""
        if self.marker_state is STARTED:  # a transaction is open (never CONTINUED: ``state`` derives it)
            return None
        self._publish(last_offset)  # (publish() without its checks: once per batch in the analysis)
        self.marker_state = NO_TRANSACTION
        return self.published_image if self.images else None

    def publish(self, offset: int) -> MetadataImage:
        """Publish everything loaded as the state at ``offset``; refused while a transaction is open."""
        if self.marker_state is STARTED:
            raise ReplayError(f"a transaction is open (since offset {self.transaction_start}): its records "
                              "cannot be published before it ends", offset=offset)
        if offset < self.offset:
            raise ValueError(f"cannot publish at {offset}: records up to {self.offset} are loaded")
        self._publish(offset)
        self.marker_state = NO_TRANSACTION
        return self.image

    def _publish(self, offset: int) -> None:
        delta = self.delta
        if self.offset > self.clean_offset and not (delta.image is self.published_state and delta.changes_nothing()):
            delta.offset = offset
            if not self.images:
                self._publish_in_place(delta)
            else:
                image = self.published_state = self.published_image = delta.apply()
                self.delta = MetadataDelta(image)
                if self.on_publish is not None:
                    self.on_publish(delta, image)
        elif self.published_state.offset != offset:
            if self.images:
                self.published_state = self.published_image = replace(self.published_state, offset=offset)
                self.delta = MetadataDelta(self.published_state)
            else:
                state = self.published_state
                set_working(state, offset=offset, features=state.features, next_producer_id=state.next_producer_id)
                self.delta.offset = offset
                if self.published_image is not None:
                    self.published_image = replace(self.published_image, offset=offset)
        self.clean_offset = offset  # never before the last record loaded (publish checks; a Begin publishes first)

    def _publish_in_place(self, delta: MetadataDelta) -> None:
        """``images=False``: the delta told, then applied to the working copy, which the next delta is over."""
        if delta.image is not self.published_state:  # over another image: a loader started inside a transaction
            self.kept_topic_deltas.clear()  # (over the working copy that goes)
            self.spare_registrations.clear()
            image = self.published_image = delta.apply()
            self.published_state = working_copy(image)
            self.delta = MetadataDelta(self.published_state)
            if self.on_publish is not None:
                self.on_publish(None, image)
            return
        if self.on_publish is not None:
            self.on_publish(delta, None)
        delta.apply_to(self.published_state)
        delta.clear()
        self.published_image = None

    def load_batch(self, base_offset: int, records: Sequence[Any], *, last_offset: int | None = None,
                   is_control: bool = False) -> MetadataImage | None:
        """Load one whole batch: its record values as the log stores them (or decoded records), then its end.
        A control batch changes nothing but publishes too. Returns the published image, or None while a
        transaction is open. ``last_offset`` defaults to the last record's."""
        if not is_control and records:
            if isinstance(records[0], bytes | None):
                self.replay_values(records, base_offset)
            else:
                replay = self.replay
                for offset, record in enumerate(records, base_offset):
                    replay(record, offset)
        last = base_offset + len(records) - 1 if last_offset is None else last_offset
        return self.end_batch(last)

    def replay_all(self, records: Iterable[tuple[int, Any]]) -> MetadataImage:
        """Replay ``(offset, record)`` pairs as one batch and return the published image (inside a transaction
        still open at the end: the image published before it)."""
        last = None
        for offset, record in records:
            self.replay(record, offset)
            last = offset
        if last is not None:
            self.end_batch(last)
        return self.image

    def load_snapshot(self, records: Iterable[Any], offset: int) -> MetadataImage:
        """Replace the state with a snapshot's records, published at ``offset``, its last contained offset
        (Kafka's handleLoadSnapshot: whatever the snapshot does not mention is gone)."""
        delta = MetadataDelta(EMPTY)
        for record in records:
            delta.replay(record)
        delta.offset = offset
        image = self.published_image = delta.apply()
        self.published_state = image if self.images else working_copy(image)
        self.delta = MetadataDelta(self.published_state)
        self.kept_topic_deltas.clear()  # (over the state that goes)
        self.spare_registrations.clear()
        self.marker_state, self.transaction_start = NO_TRANSACTION, None
        if self.on_publish is not None:
            self.on_publish(None, image)
        self.offset = self._marker = self.clean_offset = offset
        return self.image


# replay_value's compiled twin (``metalog.state.compiled.loader.ValueReplay``; ``.compiled`` None: the pure method
# runs). Each loader gets its own, as its ``replay_value``; it hands what it does not read to the pure method.
VALUE_REPLAY = core.register_twin("log", "metalog.state.compiled.loader", "ValueReplay", MetadataLoader.replay_value)

# end_batch's compiled twin (``metalog.state.compiled.publish.BatchPublish``; ``.compiled`` None: the pure method runs),
# each loader's own ``end_batch``: a batch end of a loader that keeps no image per publish, in C, with a C-level entry
# (``publish.pxd``'s ``BatchEnd.end_batch``) for a compiled batch loop
END_BATCH = core.register_twin("log", "metalog.state.compiled.publish", "BatchPublish", MetadataLoader.end_batch)
PUBLISH_PARTS = BatchPublishParts(started=STARTED, no_transaction=NO_TRANSACTION, delta=MetadataDelta,
                                  topic_delta=TopicDelta, topic_image=TopicImage, image=MetadataImage,
                                  registration=PartitionRegistration)
