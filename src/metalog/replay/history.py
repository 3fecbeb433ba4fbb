"""Point-in-time replay of a metadata log directory.

``MetadataHistory`` opens a log directory read-only and answers "what was the state at offset N
(or at time T)?" by starting from the nearest Kafka snapshot or metalog state image at or before
the target and replaying the tail of the log. State images live beside Kafka's files, in
``<log dir>/metalog-images/<20-digit offset>.image``, where Kafka never looks.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metalog.codec.framing import decode_metadata_record
from metalog.errors import DecodeError, LogError, MetalogError
from metalog.log import MetadataLog
from metalog.snapshots import SnapshotReader
from metalog.state import MetadataLoader
from metalog.state.image import EMPTY, MetadataImage
from metalog.state.serde import image_from_bytes, image_to_bytes

IMAGE_DIR = "metalog-images"
_IMAGE_NAME = re.compile(r"^(\d{20})\.image$")


@dataclass(frozen=True)
class StartPoint:
    """Where a replay starts: a snapshot or image holding the state through ``offset`` (-1: empty)."""

    kind: str  # "empty" | "checkpoint" | "image"
    offset: int
    path: Path | None = None


@dataclass(frozen=True)
class ReplayResult:
    image: MetadataImage
    offset: int  # the state includes every record up to this offset (-1: none)
    timestamp: int | None  # the timestamp of the batch holding ``offset``
    start: StartPoint
    records_replayed: int
    open_transaction: bool = False  # a transaction was open at ``offset``: its records are not in ``image``


ProgressCallback = Callable[[int, int], None]  # (records replayed, records to replay about)


class MetadataHistory:
    """The states a metadata log directory went through. Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.log = MetadataLog.open(path, writable=False)
        self.root = self.log.root

    def __enter__(self) -> MetadataHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.log.close()

    # ---- what there is ---------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        """The last offset in the log (-1 when empty)."""
        return self.log.log_end_offset - 1

    def start_points(self) -> list[StartPoint]:
        points = [StartPoint("empty", -1)]
        for sid in self.log.snapshot_ids():
            points.append(StartPoint("checkpoint", sid.end_offset - 1, self.log.directory / sid.file_name))
        image_dir = self.root / IMAGE_DIR
        if image_dir.is_dir():
            for p in image_dir.iterdir():
                m = _IMAGE_NAME.match(p.name)
                if m:
                    points.append(StartPoint("image", int(m.group(1)), p))
        # images load faster than checkpoints: at equal offsets prefer them
        return sorted(points, key=lambda p: (p.offset, p.kind == "image"))

    def offset_at_time(self, timestamp_ms: int) -> int:
        """The last offset whose batch timestamp is at or before ``timestamp_ms`` (-1: before the log)."""
        first_after = self.log.offset_for_timestamp(timestamp_ms + 1)
        return self.end_offset if first_after is None else first_after - 1

    # ---- states ----------------------------------------------------------------------------------
    def state_at(self, offset: int | None = None, *, use_snapshots: bool = True,
                 progress: ProgressCallback | None = None) -> ReplayResult:
        """The state including every record up to ``offset`` (default: the end of the log)."""
        target = self.end_offset if offset is None else offset
        if target > self.end_offset:
            raise MetalogError(f"offset {target} is past the end of the log (last offset {self.end_offset})")
        usable = [p for p in self.start_points() if p.offset <= target and (use_snapshots or p.kind == "empty")]
        replayable = [p for p in usable if p.offset + 1 >= self.log.log_start_offset]
        if not replayable:
            raise MetalogError(f"offset {target} cannot be reached: the log starts at {self.log.log_start_offset} "
                               "and no snapshot or image lies between")
        start = replayable[-1]
        with gc_paused():
            return self._replay_to(start, target, progress)

    def _replay_to(self, start: StartPoint, target: int, progress: ProgressCallback | None) -> ReplayResult:
        loader = MetadataLoader(self._load(start))
        replayed, timestamp = 0, None
        first, total = start.offset + 1, target - start.offset
        # the fused path: batches are read, checked and their values replayed without an object per batch
        for count, max_ts in self.log.scan_into(first, target, loader.replay_value) if first <= target else ():
            replayed += count
            if max_ts is not None:
                timestamp = max_ts
            if progress is not None:
                progress(replayed, total)
        if timestamp is None and target >= self.log.log_start_offset:
            timestamp = next(self.log.scan(target))[2]  # started from a snapshot right there
        return ReplayResult(loader.image, target, timestamp, start, replayed, loader.in_transaction)

    def state_at_time(self, timestamp_ms: int, **kw: Any) -> ReplayResult:
        return self.state_at(self.offset_at_time(timestamp_ms), **kw)

    def states(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, MetadataImage]]:
        """(last offset, timestamp, image) after every batch from ``start`` to ``end``, as a reader saw it."""
        end = self.end_offset if end is None else end
        base = self.state_at(start - 1) if start > 0 else None
        loader = MetadataLoader(base.image if base else EMPTY)
        first = max(start, 0)
        for base, last, max_ts, control, values in self.log.scan(first) if first <= end else ():
            if base > end:
                break
            if not control and replay_values(loader, base, values, first, end, self.log.directory):
                yield min(last, end), max_ts, loader.image

    def save_image(self, result: ReplayResult) -> Path:
        """Write ``result``'s state as a state image, so later replays can start there.

        The image is named by the last offset it includes: inside an open transaction that is the
        offset before the transaction began, so a replay from the image replays the whole transaction.
        """
        return self._write_image(result.image, result.image.offset if result.open_transaction else result.offset)

    def _write_image(self, image: MetadataImage, offset: int) -> Path:
        """``image`` as the state through ``offset``: after EndTransactionRecord the image's own offset is
        the transaction's last record, and a replay from there would meet the end without its begin."""
        if image.offset != offset:
            image = replace(image, offset=offset)
        directory = self.root / IMAGE_DIR
        directory.mkdir(exist_ok=True)
        path = directory / f"{image.offset:020d}.image"
        tmp = path.with_suffix(".image.tmp")
        tmp.write_bytes(image_to_bytes(image))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        tmp.replace(path)
        return path

    def write_images(self, every: int, progress: ProgressCallback | None = None) -> list[Path]:
        """One pass over the log, writing a state image every ``every`` offsets (where none exists yet)."""
        if every < 1:
            raise MetalogError("the image interval must be at least 1 offset")
        with gc_paused():
            return self._write_images(every, progress)

    def _write_images(self, every: int, progress: ProgressCallback | None) -> list[Path]:
        have = {p.offset for p in self.start_points() if p.kind == "image"}
        loader = MetadataLoader()
        written, replayed, next_mark = [], 0, every
        for base, last, _, control, values in self.log.scan(0) if self.end_offset >= 0 else ():
            if not control:
                replayed += replay_values(loader, base, values, 0, self.end_offset, self.log.directory)
            if last >= next_mark:
                image = loader.image
                offset = image.offset if loader.in_transaction else loader.offset
                if offset not in have and offset >= 0:
                    written.append(self._write_image(image, offset))
                    have.add(offset)
                next_mark = (last // every + 1) * every
            if progress is not None:
                progress(replayed, self.end_offset + 1)
        return written

    # ---- reading ---------------------------------------------------------------------------------
    def _load(self, start: StartPoint) -> MetadataImage:
        if start.kind == "empty" or start.path is None:
            return EMPTY
        if start.kind == "image":
            image = image_from_bytes(start.path.read_bytes(), str(start.path))
            if image.offset != start.offset:
                raise LogError(f"state image holds offset {image.offset}, its name says {start.offset}",
                               file=start.path)
            return image
        records = (decode_metadata_record(r.value).message for r in SnapshotReader(start.path).records()
                   if r.value is not None)
        return MetadataLoader().load_snapshot(records, start.offset)



def replay_values(loader: MetadataLoader, base_offset: int, values: list[bytes | None], first: int, last: int,
                  where: Path) -> int:
    """Replay one data batch's record values with offsets in [first, last]; returns how many."""
    count = 0
    replay = loader.replay_value
    offset = base_offset - 1
    try:
        for value in values:
            offset += 1
            if first <= offset <= last:
                count += 1
                replay(value, offset)
    except DecodeError as e:
        raise LogError(f"offset {offset}: {e}", file=where) from None
    return count


@contextmanager
def gc_paused() -> Iterator[None]:
    """Replay allocates millions of short-lived, acyclic objects: the cycle collector only slows it down."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_time(text: str) -> int:
    """Epoch milliseconds from ``1700000000000`` or ISO-8601 (``2023-11-14T22:13:20Z``; naive means UTC)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MetalogError(f"not a time: {text!r} (use epoch milliseconds or ISO-8601)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def format_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00",
                                                                                                         "Z")
