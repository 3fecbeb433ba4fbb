"""The loader's rules, as narrated sequences with the state asserted after each step.

Kafka: metadata/src/main/java/org/apache/kafka/image/loader/MetadataBatchLoader.java (loadBatch, replay,
maybeFlushBatches) and MetadataLoader.java (handleCommit: one maybeFlushBatches per commit; here one commit
per batch; handleLoadSnapshot).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.errors import ReplayError
from metalog.state import MetadataLoader
from metalog.state.image import EMPTY, working_copy
from metalog.state.loader import (
    ABORTED,
    CONTINUED,
    ENDED,
    NO_TRANSACTION,
    STARTED,
    AbortedTransaction,
    OpenTransaction,
    TransactionState,
)
from tests.state.histories import histories


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def broker(bid: int) -> Any:
    return rec("RegisterBrokerRecord", broker_id=bid, broker_epoch=10, incarnation_id=Uuid.of(bid, bid), fenced=True)


def config(value: str) -> Any:
    return rec("ConfigRecord", resource_type=4, resource_name="", name="k", value=value)


BEGIN, END, ABORT = rec("BeginTransactionRecord", name="t"), rec("EndTransactionRecord"), rec("AbortTransactionRecord")


def brokers(loader: MetadataLoader) -> set[int]:
    return set(loader.image.brokers)


def test_kafkas_five_transaction_states() -> None:
    assert [s.name for s in TransactionState] == ["NO_TRANSACTION", "STARTED_TRANSACTION", "CONTINUED_TRANSACTION",
                                                  "ENDED_TRANSACTION", "ABORTED_TRANSACTION"]


def test_records_are_published_at_the_end_of_their_batch() -> None:
    # MetadataBatchLoader.maybeFlushBatches: NO_TRANSACTION applies the delta at the batch's last offset
    loader = MetadataLoader()
    loader.replay(broker(1), 0)
    loader.replay(broker(2), 1)
    assert brokers(loader) == set() and loader.image.offset == -1  # loaded, not published
    assert loader.end_batch(1) is loader.image
    assert brokers(loader) == {1, 2} and loader.image.offset == 1 and loader.offset == 1


def test_a_control_batch_publishes_the_unchanged_state_at_its_last_offset() -> None:
    loader = MetadataLoader()
    loader.load_batch(0, [broker(1)])
    before = loader.image
    after = loader.load_batch(1, [], last_offset=2, is_control=True)
    assert after is not None and after.offset == 2 and after.brokers is before.brokers


def test_transaction_states_narrated() -> None:
    # MetadataBatchLoader.replay: the state after each record
    loader = MetadataLoader()
    steps = [(broker(1), NO_TRANSACTION), (BEGIN, STARTED), (broker(2), CONTINUED), (broker(3), CONTINUED),
             (END, ENDED), (broker(4), NO_TRANSACTION), (BEGIN, STARTED), (ABORT, ABORTED)]
    for offset, (record, state) in enumerate(steps):
        loader.replay(record, offset)
        assert loader.state is state, offset
    loader.end_batch(len(steps) - 1)
    assert loader.state is NO_TRANSACTION  # resetToImage after the flush


def test_a_transaction_open_at_a_batch_end_publishes_nothing() -> None:
    # maybeFlushBatches: STARTED_TRANSACTION and CONTINUED_TRANSACTION do not publish; transactions span batches
    loader = MetadataLoader()
    loader.load_batch(0, [broker(1)])
    assert loader.load_batch(1, [BEGIN]) is None and loader.state is STARTED
    assert loader.load_batch(2, [], last_offset=2, is_control=True) is None and loader.state is STARTED
    assert loader.load_batch(3, [broker(2)]) is None and loader.state is CONTINUED
    assert brokers(loader) == {1} and loader.image.offset == 0 and loader.transaction_start == 1
    image = loader.load_batch(4, [broker(3), END])
    assert image is not None and set(image.brokers) == {1, 2, 3} and image.offset == 5
    assert not loader.in_transaction and loader.transaction_start is None


def test_a_begin_inside_a_batch_publishes_what_came_before_at_the_previous_offset() -> None:
    # loadBatch: STARTED_TRANSACTION with indexWithinBatch > 0 emits the accumulated delta (provenance: the
    # offset of the record before the BeginTransactionRecord)
    loader = MetadataLoader()
    loader.replay(broker(1), 0)
    loader.replay(broker(2), 1)
    loader.replay(BEGIN, 2)
    assert brokers(loader) == {1, 2} and loader.image.offset == 1
    loader.replay(broker(3), 3)
    assert loader.end_batch(3) is None and brokers(loader) == {1, 2}


@pytest.mark.parametrize("images", [True, False])
def test_a_begin_publishes_as_the_loaders_own_batch_end_at_the_previous_offset(images: bool) -> None:
    # the publish at a BeginTransactionRecord is the loader's end_batch at the record before it (so the compiled
    # batch end, where it runs, makes it as it makes every other), and the Begin then opens the transaction
    loader = MetadataLoader(images=images)
    ends: list[int] = []
    end_batch = loader.end_batch
    loader.end_batch = lambda last: ends.append(last) or end_batch(last)  # type: ignore[method-assign]
    loader.replay_values([encode_metadata_record(broker(1), 3), encode_metadata_record(BEGIN, 0)], 0)
    assert ends == [0] and loader.state is STARTED and loader.clean_offset == 1
    assert brokers(loader) == {1} and loader.image.offset == 0


def test_a_begin_first_in_its_batch_publishes_nothing_new() -> None:
    # loadBatch: indexWithinBatch == 0 and numBatches == 0: the batch before already published this state
    loader = MetadataLoader()
    first = loader.load_batch(0, [broker(1)])
    loader.replay(BEGIN, 1)
    assert loader.image is first


def test_an_aborted_transaction_publishes_the_state_without_it() -> None:
    # maybeFlushBatches: ABORTED_TRANSACTION publishes an empty delta over the image, at the batch's last offset
    loader = MetadataLoader()
    loader.load_batch(0, [broker(1), BEGIN, broker(2)])
    image = loader.load_batch(3, [broker(3), ABORT])
    assert image is not None and set(image.brokers) == {1} and image.offset == 4


def test_records_after_an_abort_in_the_same_batch_apply_without_the_aborted_ones() -> None:
    """metalog's deliberate difference: Kafka's batch loader keeps the aborted records in its delta when records
    follow the abort in the same batch (ABORTED -> NO_TRANSACTION, no reset before the flush); metalog drops
    them, as an abort intends, and keeps the records after."""
    loader = MetadataLoader()
    image = loader.load_batch(0, [BEGIN, broker(1), ABORT, broker(2)])
    assert image is not None and set(image.brokers) == {2} and image.offset == 3
    loader = MetadataLoader()  # a Begin after the abort in the same batch publishes, without the aborted records
    loader.load_batch(0, [BEGIN, broker(1), ABORT, broker(2), BEGIN, broker(3)])
    assert brokers(loader) == {2} and loader.image.offset == 3


@pytest.mark.parametrize(("records", "reason"), [
    ([END], "no transaction is open"),
    ([ABORT], "no transaction is open"),
    ([BEGIN, END, END], "no transaction is open"),
    ([BEGIN, BEGIN], "already open"),
    ([BEGIN, broker(1), BEGIN], "already open"),
])
def test_an_illegal_marker_raises_and_changes_nothing(records: list[Any], reason: str) -> None:
    loader = MetadataLoader()
    for offset, record in enumerate(records[:-1]):
        loader.replay(record, offset)
    before = (loader.state, loader.transaction_start, loader.image, loader.offset)
    with pytest.raises(ReplayError, match=reason) as e:
        loader.replay(records[-1], len(records) - 1)
    assert e.value.offset == len(records) - 1
    assert (loader.state, loader.transaction_start, loader.image, loader.offset) == before


def test_publish_is_refused_inside_a_transaction() -> None:
    loader = MetadataLoader()
    loader.load_batch(0, [BEGIN, broker(1)])
    with pytest.raises(ReplayError, match="transaction is open"):
        loader.publish(1)


@pytest.mark.parametrize("images", [True, False])
def test_a_loader_started_inside_an_open_transaction(images: bool) -> None:
    """What the parallel replay needs: the published image and the transaction's records so far."""
    published = MetadataLoader().replay_all([(0, broker(1))])
    pending = MetadataLoader(published).replay_all([(2, broker(2))])
    loader = MetadataLoader(published, transaction=OpenTransaction(1, pending), images=images)
    assert loader.in_transaction and loader.transaction_start == 1 and loader.image == published
    loader.load_batch(3, [broker(3), END])
    assert set(loader.image.brokers) == {1, 2, 3}
    loader = MetadataLoader(published, transaction=OpenTransaction(1, pending), images=images)
    loader.load_batch(3, [ABORT, broker(4)])
    assert set(loader.image.brokers) == {1, 4}
    assert set(published.brokers) == {1} and set(pending.brokers) == {1, 2}  # neither changed


def test_aborts_are_told_to_an_observer() -> None:
    seen: list[AbortedTransaction] = []
    loader = MetadataLoader(on_abort=seen.append)
    loader.load_batch(0, [broker(1), BEGIN, broker(2)])
    loader.load_batch(3, [ABORT, BEGIN, END, BEGIN, ABORT])
    assert seen == [AbortedTransaction(3, 1), AbortedTransaction(7, 6)]


def test_each_publish_is_told_with_the_delta_that_made_it() -> None:
    told: list[tuple[Any, Any]] = []
    loader = MetadataLoader(on_publish=lambda delta, image: told.append((delta, image)))
    loader.load_batch(0, [broker(1), BEGIN, broker(2)])  # publishes before the Begin, then waits
    first = loader.image
    assert [(d.image, d.offset, set(d.brokers), i) for d, i in told] == [(EMPTY, 0, {1}, first)]
    loader.load_batch(3, [END])
    loader.end_batch(5)  # an offset moved on, nothing loaded: not told
    assert [(d.image, set(d.brokers)) for d, _ in told[1:]] == [(first, {2})] and told[1][1].offset == 3
    loader.load_snapshot([broker(7)], offset=100)
    assert told[2:] == [(None, loader.image)]


@pytest.mark.parametrize("images", [True, False])
def test_records_that_change_nothing_publish_their_offset_untold(images: bool) -> None:
    """NoOpRecords (or a metadata.version set to the level it has) publish a state that differs from the last only
    in its offset: not told, as a batch with no record is not (``images=False``: the compiled publish too)."""
    told: list[tuple[int, set[int]]] = []
    loader = MetadataLoader(on_publish=lambda delta, image: told.append((delta.offset, set(delta.brokers))),
                            images=images)
    level = rec("FeatureLevelRecord", name="metadata.version", feature_level=19)
    loader.load_batch(0, [level, broker(1)])
    loader.load_batch(2, [rec("NoOpRecord"), rec("NoOpRecord")])
    loader.load_batch(4, [level])
    assert loader.image.offset == 4 and not loader.in_transaction
    loader.load_batch(5, [rec("NoOpRecord"), broker(2)])
    assert told == [(1, {1}), (6, {2})]
    assert loader.image.offset == 6 and set(loader.image.brokers) == {1, 2}
    assert loader.image.features.metadata_version == 19


def test_a_snapshot_replaces_the_state_and_is_published_at_its_offset() -> None:
    loader = MetadataLoader()
    loader.load_batch(0, [broker(1), BEGIN, broker(2)])
    image = loader.load_snapshot([broker(7)], offset=100)
    assert set(image.brokers) == {7} and image.offset == 100 and loader.state is NO_TRANSACTION
    assert loader.load_batch(101, [broker(8)]) is not None and brokers(loader) == {7, 8}


def test_replay_all_is_one_batch() -> None:
    image = MetadataLoader().replay_all([(0, broker(1)), (1, BEGIN), (2, broker(2))])
    assert set(image.brokers) == {1} and image.offset == 0
    assert MetadataLoader(EMPTY).replay_all([]) is EMPTY


_ops = st.lists(st.sampled_from(["record", "record", "record", "noop", "begin", "end", "abort"]), max_size=40)


def _valid(ops: list[str]) -> list[Any]:
    """The ops as records, markers only where they are legal."""
    out, open_ = [], False
    for i, op in enumerate(ops):
        if op == "begin" and not open_:
            out.append(BEGIN)
            open_ = True
        elif op in ("end", "abort") and open_:
            out.append(END if op == "end" else ABORT)
            open_ = False
        elif op == "noop":
            out.append(rec("NoOpRecord"))
        else:
            out.append(config(str(i)))
    return out


@settings(max_examples=200, deadline=None)
@given(ops=_ops, sizes=st.lists(st.integers(1, 5), min_size=1, max_size=5))
def test_record_by_record_with_one_batch_end_equals_batch_by_batch(ops: list[str], sizes: list[int]) -> None:
    """Replay's fused path (replay_value per record, end_batch only after the last batch) publishes at that end
    what loading every batch publishes."""
    records = _valid(ops)
    values = [encode_metadata_record(r, 0) for r in records]
    batched, fused = MetadataLoader(), MetadataLoader()
    i = n = 0
    while i < len(values):
        size = sizes[n % len(sizes)]
        batched.load_batch(i, values[i:i + size])
        i, n = i + size, n + 1
    for offset, value in enumerate(values):
        fused.replay_value(value, offset)
    fused.end_batch(len(values) - 1)
    assert fused.image == batched.image
    assert (fused.state, fused.transaction_start) == (batched.state, batched.transaction_start)


# ---- a loader that keeps no image per publish (images=False) ----------------------------------------------------
@pytest.mark.slow  # 1.5 s or more of CPU: the full suite runs it, --quick does not
@settings(max_examples=150, deadline=None)
@given(values=histories(), cuts=st.lists(st.integers(0, 6), min_size=1, max_size=8), start=st.integers(0, 20),
       asked=st.lists(st.booleans(), min_size=1, max_size=5))
def test_without_images_every_publish_equals_the_loader_with_images(values: list[bytes], cuts: list[int],
                                                                     start: int, asked: list[bool]) -> None:
    """A loader changing its working copy in place publishes, batch by batch in any shape (empty batches are
    control batches), what the loader building an image per publish publishes; it tells each delta with the state
    before it; and an image it handed out, or was started from, never changes afterwards."""
    base = MetadataLoader()
    for offset, value in enumerate(values[:start]):
        base.replay_value(value, offset)
    base.end_batch(min(start, len(values)) - 1)
    if base.in_transaction:  # (a loader starts inside a transaction only as OpenTransaction says)
        base, start = MetadataLoader(), 0
    first = base.image
    kept = [(first, working_copy(first))]
    told: dict[bool, list[tuple[Any, ...]]] = {True: [], False: []}

    def teller(images: bool) -> Any:
        def tell(delta: Any, image: Any) -> None:
            if delta is None:
                told[images].append(("replaced", working_copy(image)))
            else:  # the state before the delta, and what the delta makes of it
                told[images].append((working_copy(delta.image), working_copy(delta.apply())))
        return tell

    with_images = MetadataLoader(first, on_publish=teller(True))
    without = MetadataLoader(first, on_publish=teller(False), images=False)
    offset, n, sizes = len(values[:start]), 0, [*cuts, 3]  # (never only empty batches)
    while offset < len(values):
        size = sizes[n % len(sizes)]
        batch = values[offset:offset + size]
        last = offset + len(batch) - 1 if batch else max(with_images.offset, 0)
        assert (with_images.load_batch(offset, batch, last_offset=last, is_control=not batch) is None) == \
            with_images.in_transaction
        assert without.load_batch(offset, batch, last_offset=last, is_control=not batch) is None
        assert without.in_transaction == with_images.in_transaction
        assert (without.state, without.transaction_start) == (with_images.state, with_images.transaction_start)
        if asked[n % len(asked)]:
            image = without.image
            assert image == with_images.image
            kept.append((image, working_copy(image)))
        offset, n = offset + len(batch), n + 1
    assert without.image == with_images.image
    assert told[False] == told[True]
    for image, copy in kept:
        assert image == copy


def test_a_working_copy_shares_no_container() -> None:
    loader = MetadataLoader()
    loader.replay_all([(0, broker(1)), (1, config("1"))])
    image = loader.image
    copy = working_copy(image)
    assert copy == image
    for name in ("brokers", "controllers", "topics", "topics_by_name", "configs", "client_quotas", "acls", "scram",
                 "delegation_tokens"):
        assert getattr(copy, name) is not getattr(image, name), name
