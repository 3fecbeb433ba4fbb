"""A scan gives back the pages of a mapped segment it has read (``scan.release_read``): the resident set of a
scan is about a chunk's, not the segment's, and what it yields is unchanged."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from metalog.log.scan import release_read


def resident_kb(path: Path) -> int:
    """The resident kB of this process' mappings of ``path`` (/proc/self/smaps)."""
    total, ours = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isalnum() and "-" in line.split(" ", 1)[0] and not line.startswith(("Rss", "Size")):
            ours = line.rstrip().endswith(str(path))
        elif ours and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not (Path("/proc/self/smaps").exists() and hasattr(mmap, "MADV_DONTNEED")),
                    reason="Linux's smaps and madvise")
def test_the_pages_read_are_given_back_and_read_again_when_touched(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    data = os.urandom(64 * mmap.PAGESIZE)
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), len(data), access=mmap.ACCESS_READ) as mapped:
        assert bytes(mapped) == data  # every page read: resident
        assert resident_kb(path) >= 64 * mmap.PAGESIZE // 1024
        reached = release_read(mapped, 0, 40 * mmap.PAGESIZE + 100)  # the scan has read into page 40
        assert reached == 40 * mmap.PAGESIZE
        assert resident_kb(path) <= 24 * mmap.PAGESIZE // 1024  # pages 0-39 given back, 40-63 kept
        assert release_read(mapped, reached, reached + 10) == reached  # nothing whole to give back
        assert bytes(mapped) == data  # read again from the file


def test_bytes_are_left_alone() -> None:
    assert release_read(b"x" * 3 * mmap.PAGESIZE, 0, 2 * mmap.PAGESIZE) == 2 * mmap.PAGESIZE


@pytest.mark.skipif(not (Path("/proc/self/smaps").exists() and hasattr(mmap, "MADV_DONTNEED")),
                    reason="Linux's smaps and madvise")
@pytest.mark.slow  # 1.5 s or more of CPU (a 60,000-record log): the full suite runs it, --quick does not
def test_replays_fused_scan_gives_back_what_it_has_read(tmp_path: Path) -> None:
    """``MetadataLog.scan_into`` (replay's path) holds about a chunk of its segment resident, not the segment:
    at its last step every earlier MiB of the segment has been given back, and every record was still passed."""
    from metalog.bench.replay import build_log
    from metalog.log import MetadataLog

    build_log(tmp_path, 60_000, seed=3)
    offsets: list[int] = []
    with MetadataLog.open(tmp_path) as log:
        (segment,) = log.segments
        size = segment.size
        assert size > 4 << 20  # several of the scan's 1 MiB chunks
        resident = [resident_kb(Path(segment.path)) for _ in log.scan_into(0, 1 << 62, lambda v, o: offsets.append(o))]
    assert offsets == list(range(len(offsets))) and len(offsets) >= 60_000
    assert resident[-1] <= 3 * 1024  # KiB: the last chunks', not the segment's
