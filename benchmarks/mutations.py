"""The byte mutations both fuzz scripts (fuzz_compiled.py, fuzz_log.py) apply to valid inputs."""

from __future__ import annotations

import random

POKES = (0x00, 0x01, 0x7F, 0x80, 0xFF)  # the bytes at a varint's and a sign's edges
# lengths and varints as large as they get: a reader must refuse them before it allocates
HUGE = (b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x10")


def mutate(rng: random.Random, raw: bytes, other: bytes, *, edits: int, splice: int) -> bytes:
    """``raw`` with 1 to ``edits`` random edits: bit flips, edge bytes, huge lengths, cuts, insertions,
    deletions, and a splice of up to ``splice`` bytes of ``other``."""
    buf = bytearray(raw)
    for _ in range(rng.randint(1, edits)):
        kind = rng.randrange(8)
        at = rng.randint(0, len(buf))
        if kind == 0 and at < len(buf):
            buf[at] ^= 1 << rng.randrange(8)
        elif kind == 1 and at < len(buf):
            buf[at] = rng.choice(POKES)
        elif kind == 2:
            buf[at:at + 4] = rng.choice(HUGE)
        elif kind == 3:
            del buf[at:]
        elif kind == 4:
            buf[at:at] = rng.randbytes(rng.randint(1, 8))
        elif kind == 5:
            del buf[at:at + rng.randint(1, 8)]
        elif kind == 6:
            cut = rng.randint(0, len(other))
            buf[at:] = other[cut:cut + rng.randint(0, splice)]
        elif at < len(buf):
            buf[at] = rng.randrange(256)
    return bytes(buf)
