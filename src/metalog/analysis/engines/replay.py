"""The loop every engine runs over a cluster's batches: the log's scan hands each batch's records to the loader and
tells the per-batch loop (``domain.loop.BatchLoop``) of its end; the loop ends the batch in the loader, which tells
the per-batch step (``domain.step``) its delta, and hands the step's rows on as typed column chunks
(``domain.columns.Chunk``) every ``CHUNK_BATCHES`` batches, so that what an engine holds at once does not grow with
the log. Where the compiled twins run (the log's scan, the loader's dispatch, the loop and the step), nothing between
them is a Python frame per batch."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.domain.loop import BatchLoopParts
from metalog.analysis.domain.twins import batch_loop, cluster_step
from metalog.analysis.outputs.growth import count_for, growth_reader
from metalog.analysis.outputs.growth_parts import GrowthPart
from metalog.errors import LogError, MetalogError
from metalog.log import MetadataLog
from metalog.log.control import ControlType, decode_control
from metalog.log.tee import ScanReader, tee
from metalog.replay.history import MetadataHistory
from metalog.state import MetadataLoader
from metalog.state.image import MetadataImage
from metalog.state.loader import OpenTransaction

__all__ = ["CHUNK_BATCHES", "TimelineReplay", "leader_changes", "log_records"]

# batches replayed between two hand-overs of their rows (what an engine holds at once): a timeline chunk (a row per
# batch) is then one of the writers' row groups (``outputs.writers.ROWS_PER_GROUP``), which no one joins again; the
# step keeps its rows as columns, so a hand-over copies each column whole (4,096 batches cost ~0.04 s more CPU on
# the 1M-record benchmark log, most of it the joins and the page faults of their copies)
CHUNK_BATCHES = 65_536


class TimelineReplay:
    """One cluster's batches, in log order, through the per-batch loop and step (``domain.loop.BatchLoop``,
    ``domain.step.ClusterStep``, or their compiled twins where built: ``domain.twins``): the loop every engine
    runs. The loader keeps no image per batch (``images=False``): it tells the step each delta, and builds an image
    only where the step asks for one. ``log_start``: the batches start at the log's start (else at a range of the
    parallel replay, whose ``image`` is the state after the batch before). ``chunk_batches``: how many batches'
    rows make a chunk (default: the module's ``CHUNK_BATCHES`` as it is when the replay is made)."""

    def __init__(self, log: MetadataLog, cluster: str, image: MetadataImage,
                 transaction: OpenTransaction | None = None, *, log_start: bool = True,
                 chunk_batches: int | None = None) -> None:
        self.log = log
        self.chunk_batches = CHUNK_BATCHES if chunk_batches is None else chunk_batches
        self.step = cluster_step()(cluster, image, self._image, log_start=log_start)
        self.loader = MetadataLoader(image, transaction=transaction, on_abort=self.step.aborted,
                                     on_publish=self.step.published, images=False)
        self.records = 0  # data records replayed

    def _image(self) -> MetadataImage:
        return self.loader.image

    def run(self, first: int, last: int, sink: Callable[[Chunk], object],
            progress: Callable[[int], object] | None = None, also: ScanReader | None = None) -> int:
        """The batches ending at ``first`` or later, up to the one holding ``last``, replayed (their records from
        ``first`` on: a log may start inside its first batch), and the step's rows of them handed to ``sink`` as
        chunks (a chunk per table) every ``chunk_batches`` batches and after the last, in log order;
        ``progress(records replayed)`` about every MiB of log. ``also``: another reader of the same scan, handed
        each value and batch end after the replay (``metalog.log.tee``: the growth pass' count). Returns the data
        records replayed."""
        loop = batch_loop()(BatchLoopParts(self.loader, self.step, partial(leader_changes, self.log), sink,
                                           self.chunk_batches))
        reader = ScanReader(self.loader.replay_value, loop)
        if also is not None:
            reader = tee(reader, also)
        for count, _ in self.log.scan_into(first, last, reader.sink, reader.batch_end):
            self.records += count
            if progress is not None:
                progress(self.records)
        loop.finish()
        return self.records

    def run_counted(self, first: int, last: int, sink: Callable[[Chunk], object],
                    progress: Callable[[int], object] | None = None) -> tuple[int, GrowthPart]:
        """``run``, with the growth count of the batches it scans (``outputs.growth.count_for``) read off the same
        scan (``also``): the data records replayed, and the count's columns (``growth.part_growth`` makes the
        growth tables of it; the ranges' of one log are ``growth_parts.joined`` first)."""
        count = count_for(self.log)
        records = self.run(first, last, sink, progress, growth_reader(count))
        return records, GrowthPart.of(count)


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
