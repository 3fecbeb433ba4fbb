"""The growth pass' counting, fed by the log's own scan (``MetadataLog.scan_into``, or the replay's through a tee:
``metalog.log.tee``): each data record's value as the scan's sink, each batch's end as its batch-end hook. Nothing
is decoded but the start of a value's frame (its apiKey); a control batch's records, which no sink is handed, are
read by ``control_types``.

Per minute of log time (a batch's maxTimestamp, floored: ``tables.bucket_start``) it keeps the batches and their
bytes, and per record type the records and their values' bytes, as columns (``array('q')``) appended as the log
moves on to another minute, a minute's types in ``type_order`` (the growth table's order: by name): a minute the
log comes back to later is appended again (``growth.counted_growth`` adds the two up). It also keeps the (base
offset, max timestamp, is control) of the log's first batch and of its control batches, in log order: all
``replay.quorum.quorum_history`` needs to read.

``GrowthCount`` is the pure twin of ``metalog.analysis.outputs.compiled.growth_count.GrowthCount``, which the scan's
compiled loop hands values and batch ends in C (``c_value_sink``, ``batch_end.c_batch_end``); tests hold the two
equal. The twin is registered by ``metalog.analysis.outputs.growth``.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import Any

from metalog.analysis.outputs.tables import bucket_start
from metalog.codec.framing import FRAME_VERSION, metadata_api_key
from metalog.errors import DecodeError
from metalog.replay.quorum import BatchMark

NOT_A_FRAME = "the record's value is not a metadata record frame (frame version 1, apiKey, version)"
ControlTypes = Callable[[int], Iterable[tuple[int, int]]]  # a control batch's base -> (type key, value bytes) each
TypeOrder = Callable[[int], Any]  # a type key -> its sort key among a minute's rows



class GrowthCount:
    """What the growth pass counts (see the module). ``control_types(base)`` gives (type key, value bytes) for each
    record of the control batch at ``base`` that is counted; ``minute_ms`` is a minute; ``type_order``, the sort key
    of a minute's rows by type key (default: the key itself). ``close()`` after the scan."""

    def __init__(self, control_types: ControlTypes, minute_ms: int, type_order: TypeOrder | None = None) -> None:
        self.control_types, self.minute_ms, self.type_order = control_types, minute_ms, type_order
        self.minutes, self.minute_batches, self.minute_bytes = array("q"), array("q"), array("q")
        self.type_minutes, self.type_keys, self.type_records, self.type_bytes = (array("q"), array("q"),
                                                                                   array("q"), array("q"))
        self.marks: list[BatchMark] = []  # the first batch's and each control batch's
        self._batch: dict[int, list[int]] = {}  # the batch being read: type key -> [records, bytes]
        self._types: dict[int, list[int]] = {}  # the minute being counted: type key -> [records, bytes]
        self._minute: int | None = None
        self._batches = self._bytes = 0

    def __call__(self, value: bytes | None, offset: int) -> None:
        """The scan's sink: a data record's value (a DecodeError names what is wrong; the scan adds the offset)."""
        if value is None:
            raise DecodeError(NOT_A_FRAME)
        if len(value) > 1 and value[0] == FRAME_VERSION and value[1] < 0x80:
            key = value[1]  # a one-byte apiKey: every Kafka record
        else:
            found = metadata_api_key(value)
            if found is None:
                raise DecodeError(NOT_A_FRAME)
            key = found
        self._add(self._batch, key, len(value))

    def batch_end(self, base: int, last: int, timestamp: int, control: bool, size: int) -> None:
        """The scan's batch-end hook: the batch at ``base`` ends (its values were handed over)."""
        minute = bucket_start(timestamp, self.minute_ms)
        if minute != self._minute:
            self._close_minute()
            self._minute = minute
        self._batches += 1
        self._bytes += size
        if control:
            for key, size_of in self.control_types(base):
                self._add(self._batch, key, size_of)
        if control or not self.marks:
            self.marks.append((base, timestamp, control))
        types = self._types
        for key, (records, size_of) in self._batch.items():
            counts = types.get(key)
            if counts is None:
                types[key] = [records, size_of]
            else:
                counts[0] += records
                counts[1] += size_of
        self._batch.clear()

    def close(self) -> None:
        """The last minute's counts into the columns."""
        self._close_minute()
        self._minute = None

    @staticmethod
    def _add(counts: dict[int, list[int]], key: int, size: int) -> None:
        found = counts.get(key)
        if found is None:
            counts[key] = [1, size]
        else:
            found[0] += 1
            found[1] += size

    def _close_minute(self) -> None:
        minute = self._minute
        if minute is None:
            return
        self.minutes.append(minute)
        self.minute_batches.append(self._batches)
        self.minute_bytes.append(self._bytes)
        for key in sorted(self._types, key=self.type_order):
            records, size = self._types[key]
            self.type_minutes.append(minute)
            self.type_keys.append(key)
            self.type_records.append(records)
            self.type_bytes.append(size)
        self._types.clear()
        self._batches = self._bytes = 0
