"""What both fuzz scripts (fuzz_compiled.py, fuzz_log.py) share: the byte mutations they apply to valid inputs,
the resident set and reference counts they watch, and their verdict."""

from __future__ import annotations

import random
import sys
from pathlib import Path

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


def rss_kb() -> int:
    """This process' resident set, KB (0 where /proc is not there)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def refcounts(**more: object) -> dict[str, int]:
    """Reference counts of the immortal-looking objects a leaking reader would pin, and of ``more``."""
    objects = {"None": None, "True": True, "False": False, "0": 0, "1": 1, "-1": -1, **more}
    return {name: sys.getrefcount(o) for name, o in objects.items()}


def verdict(disagreements: list[str], against: str, shown: int, base_rss: int | None, end_rss: int,
            grown: dict[str, int], *, clip: int | None) -> int:
    """Prints what went wrong (``shown`` disagreements with ``against``, each cut to ``clip`` characters; a
    grown resident set or reference counts) and the one-line verdict; the exit status."""
    failed = False
    if disagreements:
        failed = True
        print(f"{len(disagreements)} disagreements with {against}, e.g.:")
        for d in disagreements[:shown]:
            print(" ", d[:clip])
    if base_rss is not None and end_rss - base_rss > 16 * 1024:
        failed = True
        print(f"LEAK? the resident set grew by {end_rss - base_rss:,} KB")
    if any(abs(v) > 1000 for v in grown.values()):
        failed = True
        print("LEAK? reference counts grew")
    print("FAILED" if failed else "no crash, no disagreement, no growth")
    return 1 if failed else 0
