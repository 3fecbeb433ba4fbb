"""The analysis' per-batch loop: what happens at each batch end of a cluster's log, as the hook the log's scan tells
of it (``metalog.log.scan.Scan.batch_end``), after the scan has handed the batch's records to the loader.

At each batch end, in log order (Kafka's MetadataBatchLoader at the end of a batch, then its publishers):

1. the loader ends the batch (``MetadataLoader.end_batch``): it publishes unless a transaction is open, telling the
   step the delta (``ClusterStep.published``);
2. a control batch's LeaderChangeMessages are told to the step (``ClusterStep.leader_change``), read by the
   ``leader_changes`` the engine gives (the domain reads no log; control batches are few);
3. the step appends the batch's rows (``ClusterStep.batch``);
4. every ``chunk_batches`` batches, and once more at the end (``finish``), the step's rows are handed to ``sink``
   as column chunks (a chunk per table, ``ClusterStep.take``), so that what is held does not grow with the log.

This is the pure twin; ``metalog.analysis.domain.compiled.loop`` is the compiled one, which the log's compiled scan
tells in C (``c_batch_end``). Both take a ``BatchLoopParts``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from metalog.analysis.domain.columns import Chunk
from metalog.analysis.domain.step import ClusterStep
from metalog.state.loader import MetadataLoader

__all__ = ["BatchLoop", "BatchLoopParts", "LeaderChanges"]

# (leaderId, epoch) of each LeaderChangeMessage in the control batch at a base offset
LeaderChanges = Callable[[int], Iterable[tuple[int, int]]]


@dataclass(frozen=True)
class BatchLoopParts:
    """What the loop works with: the cluster's loader (``images=False``, telling ``step`` its deltas), its
    per-batch step, how to read a control batch's leader changes, where the rows go, and how many batches' rows
    make a chunk."""

    loader: MetadataLoader
    step: ClusterStep
    leader_changes: LeaderChanges
    sink: Callable[[Chunk], object]
    chunk_batches: int


class BatchLoop:
    """The per-batch loop (see the module's docstring): ``loop(base, last, timestamp, control, size)`` at each
    batch end, ``finish()`` after the last."""

    def __init__(self, parts: BatchLoopParts) -> None:
        if parts.chunk_batches < 1:
            raise ValueError(f"chunk_batches must be at least 1, not {parts.chunk_batches}")
        self.parts = parts
        self.batches = 0  # batches since the last hand-over

    def __call__(self, base: int, last: int, timestamp: int, control: bool, size: int) -> None:
        """The batch at ``base`` ending at ``last`` (max timestamp ``timestamp``, ``size`` bytes) is loaded."""
        parts = self.parts
        loader, step = parts.loader, parts.step
        loader.end_batch(last)
        if control:
            for leader, epoch in parts.leader_changes(base):
                step.leader_change(last, leader, epoch)
        step.batch(last, timestamp, loader.in_transaction)
        self.batches += 1
        if self.batches >= parts.chunk_batches:
            self.hand_over()

    def hand_over(self) -> None:
        """The step's rows since the last hand-over to the sink, a chunk per table."""
        self.batches = 0
        sink = self.parts.sink
        for chunk in self.parts.step.take().values():
            sink(chunk)

    def finish(self) -> None:
        """After the last batch: the rows not handed over yet."""
        if self.parts.step.pending:
            self.hand_over()
