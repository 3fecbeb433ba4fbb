"""The loop every engine runs over a cluster's batches: the loader tells the per-batch step (``domain.step``)
each delta, and the step's rows are handed on as typed column chunks (``domain.columns.Chunk``) every
``CHUNK_BATCHES`` batches, so what an engine holds at once does not grow with the log."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from itertools import islice

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.domain.twins import cluster_step
from metalog.errors import LogError, MetalogError
from metalog.log import MetadataLog
from metalog.log.control import ControlType, decode_control
from metalog.log.scan import ScannedBatch
from metalog.replay.history import MetadataHistory, replay_scanned
from metalog.state import MetadataLoader
from metalog.state.image import MetadataImage
from metalog.state.loader import OpenTransaction

__all__ = ["CHUNK_BATCHES", "TimelineReplay", "leader_changes", "log_records", "replay_chunks"]

# batches replayed between two hand-overs of their rows (what an engine holds at once)
CHUNK_BATCHES = 4096


class TimelineReplay:
    """One cluster's batches, in log order, through the per-batch step (``domain.step.ClusterStep``, or its compiled
    twin where built: ``domain.twins``): the loop every engine runs. The loader keeps no image per batch
    (``images=False``): it tells the step each delta, and builds an image only where the step asks for one.
    ``log_start``: the batches start at the log's start (else at a range of the parallel replay, whose ``image``
    is the state after the batch before)."""

    def __init__(self, log: MetadataLog, cluster: str, image: MetadataImage,
                 transaction: OpenTransaction | None = None, *, log_start: bool = True) -> None:
        self.log = log
        self.step = cluster_step()(cluster, image, self._image, log_start=log_start)
        self.loader = MetadataLoader(image, transaction=transaction, on_abort=self.step.aborted,
                                     on_publish=self.step.published, images=False)
        self.records = 0  # data records replayed

    def _image(self) -> MetadataImage:
        return self.loader.image

    def run(self, batches: Iterable[ScannedBatch], first: int,
            progress: Callable[[int], object] | None = None) -> None:
        """Each batch (in log order, its records from ``first`` on: a log may start inside its first batch)
        replayed, and the step's rows of it; ``progress(records replayed)`` after each batch."""
        loader, step, where, log = self.loader, self.step, self.log.directory, self.log
        for scanned in batches:
            base, last, timestamp, control, _ = scanned
            self.records += replay_scanned(loader, scanned, where, first)
            loader.end_batch(last)
            if control:
                for leader, epoch in leader_changes(log, base):
                    step.leader_change(last, leader, epoch)
            step.batch(last, timestamp, loader.in_transaction)
            if progress is not None:
                progress(self.records)


def leader_changes(log: MetadataLog, base_offset: int) -> list[tuple[int, int]]:
    """(leaderId, epoch) of each LeaderChangeMessage in the control batch at ``base_offset``; the epoch is the
    batch's partitionLeaderEpoch (control batches are few: read again here, with their keys)."""
    batch = next(log.batches(base_offset))
    out = []
    for record in batch.records():
        try:
            control = decode_control(record.key, record.value)
        except MetalogError as e:
            raise LogError(f"offset {record.offset}: {e}", file=log.directory) from None
        if control.type == ControlType.LEADER_CHANGE:
            out.append((control.message.leader_id, batch.partition_leader_epoch))
    return out


def log_records(path: str | os.PathLike[str]) -> int:
    """Offsets in a log directory (the size of the work, for progress)."""
    with MetadataHistory(path) as history:
        return history.end_offset + 1 - history.log.log_start_offset


def replay_chunks(replay: TimelineReplay, batches: Iterable[ScannedBatch], first: int,
                  sink: Callable[[Chunk], object], progress: Callable[[int], object] | None = None) -> int:
    """``batches`` through ``replay``, their rows handed to ``sink`` as chunks (a chunk per table) every
    ``CHUNK_BATCHES`` batches, in log order; the data records replayed."""
    batches = iter(batches)
    while True:
        replay.run(islice(batches, CHUNK_BATCHES), first, progress)
        if not replay.step.pending:
            return replay.records
        for chunk in replay.step.take().values():
            sink(chunk)
