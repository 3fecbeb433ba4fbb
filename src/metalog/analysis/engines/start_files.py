"""A range's start state as a file (``parallel.StartState``): what one process replayed up to a range, handed to
the process that replays the range, on the same machine.

Layout: the offset of the BeginTransactionRecord of a transaction open at the range's start (8 bytes, signed,
big-endian; -1: none), the length of the published state's image (8 bytes, unsigned, big-endian), that image
(``state.serde``'s bytes: versioned and checksummed), and with a transaction open, the length and image of the
state with its records so far. Written whole, then renamed into place.

The writer holds an exclusive ``flock`` on a lock file beside it (``lock_of``) from before the reader may look
until the file is in place, or until the writer exits without it (the kernel then lets the lock go): the reader
takes the lock shared, so it waits for the writer rather than guessing, and finds the file there, or not
(``read_start``: None, and the reader catches up itself).
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

from metalog.errors import ImageFormatError
from metalog.state.overlay import StartState
from metalog.state.serde import image_from_bytes, image_to_bytes

__all__ = ["lock_of", "read_start", "write_start"]

_HEAD = struct.Struct(">qQ")
_LENGTH = struct.Struct(">Q")


def lock_of(path: Path) -> Path:
    """The lock file of the start state ``path``."""
    return path.with_name(path.name + ".lock")


def write_start(path: Path, start: StartState) -> None:
    """``start`` into ``path``: written whole to a temporary name, then renamed."""
    image = image_to_bytes(start.image)
    parts = [_HEAD.pack(-1 if start.transaction is None else start.transaction[0], len(image)), image]
    if start.transaction is not None:
        pending = image_to_bytes(start.transaction[1])
        parts += [_LENGTH.pack(len(pending)), pending]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(parts))
    tmp.replace(path)


def read_start(path: Path) -> StartState | None:
    """The start state at ``path``, once its writer holds its lock no longer (``lock_of``); None where there is
    none (no lock file: nobody was to write it; or its writer ended without it)."""
    try:
        lock = os.open(lock_of(path), os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)  # (returns once the writer has let go)
    finally:
        os.close(lock)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return _parsed(data, str(path))


def _parsed(data: bytes, where: str) -> StartState:
    if len(data) < _HEAD.size:
        raise ImageFormatError(f"{where}: a start state of {len(data)} bytes, shorter than its header")
    begin, size = _HEAD.unpack_from(data)
    at = _HEAD.size + size
    image = image_from_bytes(data[_HEAD.size:at], where)
    if begin < 0:
        return StartState(image, None)
    if len(data) < at + _LENGTH.size:
        raise ImageFormatError(f"{where}: byte {at}: the open transaction's image is missing")
    (pending,) = _LENGTH.unpack_from(data, at)
    return StartState(image, (begin, image_from_bytes(data[at + _LENGTH.size:at + _LENGTH.size + pending], where)))
