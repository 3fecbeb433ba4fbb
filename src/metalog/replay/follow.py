"""Following the state changes of a live log: each state Kafka's loader publishes, as the log grows.

The batches come from ``metalog.log.follow.LogFollower``; they are loaded with Kafka's loader
(``metalog.state.MetadataLoader``) from the state published before the first offset asked for, so a
transaction's records appear when the batch that commits it lands, never before, and an aborted one never.
When the log is truncated under the follower (batches a new leader did not commit), the state is loaded again
from the log as it is then.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from metalog.log.batch import RecordBatch
from metalog.log.follow import END, POLL_SECONDS, LogFollower
from metalog.replay.changes import state_before
from metalog.replay.history import MetadataHistory
from metalog.state import MetadataLoader
from metalog.state.image import MetadataImage


@dataclass(frozen=True)
class Published:
    """A state the loader published while following: the state before it, it, and the batch that published it."""

    before: MetadataImage
    after: MetadataImage
    batch: RecordBatch


def follow_states(path: str | os.PathLike[str], start: int | str = END, *, poll_seconds: float = POLL_SECONDS,
                  stop: Callable[[], bool] | None = None,
                  on_notice: Callable[[str], object] | None = None) -> Iterator[Published]:
    """Every state published from ``start`` (an offset, or ``END``) on, as the log grows: at each batch end
    outside a transaction, and just before a BeginTransactionRecord inside a batch (Kafka's loadBatch)."""
    notice = on_notice or (lambda text: None)
    while True:
        truncated: list[str] = []
        with MetadataHistory(path) as history:
            first = history.log.log_end_offset if start == END else int(start)
            image = state_before(history, first)
        loader = MetadataLoader(image)
        with LogFollower(path, image.offset + 1, poll_seconds=poll_seconds, on_notice=truncated.append) as follower:
            def done(truncated: list[str] = truncated) -> bool:
                return bool(truncated) or (stop is not None and stop())

            for batch in follower.batches(stop=done):
                yield from _published_by(batch, loader, image, first)
                image = loader.image
            start = follower.next_offset
        if not truncated:
            return
        for text in truncated:
            notice(f"{text}; the state is loaded again from the log as it is now")


def _published_by(batch: RecordBatch, loader: MetadataLoader, image: MetadataImage,
                  first: int) -> Iterator[Published]:
    """The states ``batch`` makes ``loader`` publish, from offset ``first`` on (``image``: the state published
    before it): just before a BeginTransactionRecord inside it, and at its end."""
    records = batch.records()  # every batch's, a control batch's too: KRaft's rules for its records
    if not batch.is_control:
        for record in records:
            loader.replay_value(record.value, record.offset)
            if loader.image is not image:  # a BeginTransactionRecord inside the batch published
                if loader.image.offset >= first:
                    yield Published(image, loader.image, batch)
                image = loader.image
    loader.end_batch(batch.last_offset)
    if loader.image is not image and loader.image.offset >= first:
        yield Published(image, loader.image, batch)
