"""Two readers of one scan (``metalog.log.scan``): what the scan hands a reader, each data record's value and each
batch's end, handed to one reader and then to another, so that two passes over a log read it once (the analysis'
replay and its growth count).

``tee(first, second)`` is a ``ScanReader`` whose sink hands each value to ``first``'s sink, then to ``second``'s,
and whose batch-end hook tells ``first``'s hook, then ``second``'s: ``second`` sees the log as a scan of its own
would show it, and an error of ``first``'s is raised before ``second`` is told (a DecodeError of either names the
record's offset, as the scan names any sink's). ``ValueTee`` and ``EndTee`` are the pure twins of
``metalog.log.compiled.tee``'s, which hand on in C where a reader carries a C entry (``c_value_sink``,
``c_batch_end``) and carry their own, so that the compiled scan tells a tee in C too; tests hold them equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from metalog.codec import core
from metalog.log.scan import BatchEnd, RecordSink

__all__ = ["EndTee", "ScanReader", "ValueTee", "tee"]


@dataclass(frozen=True, slots=True)
class ScanReader:
    """What a scan hands what it reads to (``MetadataLog.scan_into``): ``sink(value, offset)`` for each data record,
    ``batch_end(base offset, last offset, max timestamp, is control, size in bytes)`` after each batch."""

    sink: RecordSink
    batch_end: BatchEnd


class ValueTee:
    """A sink handing each value to ``first``, then to ``second``."""

    def __init__(self, first: RecordSink, second: RecordSink) -> None:
        self.first, self.second = first, second

    def __call__(self, value: bytes | None, offset: int) -> None:
        self.first(value, offset)
        self.second(value, offset)


class EndTee:
    """A batch-end hook telling ``first``, then ``second``."""

    def __init__(self, first: BatchEnd, second: BatchEnd) -> None:
        self.first, self.second = first, second

    def __call__(self, base: int, last: int, timestamp: int, control: bool, size: int) -> None:
        self.first(base, last, timestamp, control, size)
        self.second(base, last, timestamp, control, size)


# The compiled twins (``.compiled`` None: the pure tees run), in the "log" core.
VALUE_TEE = core.register_twin("log", "metalog.log.compiled.tee", "ValueTee", ValueTee)
END_TEE = core.register_twin("log", "metalog.log.compiled.tee", "EndTee", EndTee)


def tee(first: ScanReader, second: ScanReader) -> ScanReader:
    """One reader handing what a scan reads to ``first``, then to ``second`` (see the module)."""
    values: type[ValueTee] = ValueTee if VALUE_TEE.compiled is None else VALUE_TEE.compiled
    ends: type[EndTee] = EndTee if END_TEE.compiled is None else END_TEE.compiled
    return ScanReader(values(first.sink, second.sink), ends(first.batch_end, second.batch_end))
