"""Controller: commands in, records out. The command logic is pure (commands.execute); this class
is the edge that keeps the state (a MetadataLoader) and, when given one, appends to a MetadataLog (opened by
its caller: ``metalog.storage.simulation``, the CLI)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from metalog.codec.uuid import Uuid
from metalog.controller.commands import Command, CommandContext, CreateTopic, Result, execute
from metalog.state.image import MetadataImage
from metalog.state.loader import MetadataLoader

if TYPE_CHECKING:
    from metalog.codec.runtime import ApiMessage
    from metalog.log.metadata_log import MetadataLog


class Controller:
    """Applies commands to its state; accepted commands' records go to the log as one batch."""

    def __init__(self, log: MetadataLog | None = None, *, cluster_id: str | None = None, seed: int = 0,
                 loader: MetadataLoader | None = None) -> None:
        if log is not None and loader is None and log.log_end_offset > 0:
            raise ValueError("give the loader that replayed this log (the controller starts from its state)")
        self.log = log
        self.cluster_id = cluster_id
        self.loader = loader or MetadataLoader()
        self._rng = random.Random(seed)  # topic ids: reproducible for a seed

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    @property
    def next_offset(self) -> int:
        return self.log.log_end_offset if self.log is not None else self.loader.offset + 1

    def submit(self, command: Command) -> Result:
        result = execute(self.image, command, CommandContext(self.next_offset, self.cluster_id))
        if result.records:
            self._append(result.records)
        return result

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     start_index: int | None = None) -> Result:
        """CreateTopic with a fresh topic id and, unless given, a start index drawn like Kafka's (seeded here)."""
        start = self._rng.randrange(1000) if start_index is None else start_index
        return self.submit(CreateTopic(name, self.new_topic_id(), partitions, replication_factor, start))

    def new_topic_id(self) -> Uuid:
        while True:
            u = Uuid(self._rng.randbytes(16))
            if not u.is_reserved and u not in self.image.topics:
                return u

    def _append(self, records: list[tuple[ApiMessage, int]]) -> None:
        """Append the records (the log decides the batches) and load them batch by batch, as a reader of the
        log would: the state is the one published after the last batch."""
        first = self.next_offset
        spans = [(first, first + len(records) - 1)]
        if self.log is not None:
            batches = self.log.append(records)
            assert batches[0].base_offset == first and batches[-1].last_offset == first + len(records) - 1
            spans = [(b.base_offset, b.last_offset) for b in batches]
        messages = [record for record, _version in records]
        for base, last in spans:
            self.loader.load_batch(base, messages[base - first:last - first + 1])
