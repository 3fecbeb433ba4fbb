"""report.html: self-contained, one summary line per cluster, four charts each; drawn in headless Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from metalog.analysis.pipeline import analyze_python
from metalog.analysis.report import (
    BROKER_SERIES,
    DIR_COLORS,
    OFFLINE_SERIES,
    PHASE_COLORS,
    REPLICA_SERIES,
    write_report,
)
from tests.analysis.test_timeline import jbod_transition, zk_migration


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    result = analyze_python([zk_migration(root / "zk"), jbod_transition(root / "jbod")])
    write_report(root, result.rows, result.events)
    return root


def test_the_page_is_self_contained(report: Path) -> None:
    page = (report / "report.html").read_text()
    assert "<script" not in page
    assert re.findall(r"(?:src|href)=", page) == []
    assert set(re.findall(r"https?://[^\"' ]+", page)) == {"http://www.w3.org/2000/svg"}


def test_summary_charts_and_events(report: Path) -> None:
    page = (report / "report.html").read_text()
    summaries = re.findall(r"<li>(.*?)</li>", page)
    assert [s.split(":")[0] for s in summaries] == ["zk", "jbod"]
    assert summaries[0].startswith("zk: post-migration since 2023-11-14 22:13:27, JBOD not-started")
    assert "1 aborted transactions" in summaries[0]
    assert "1 directory failures" in summaries[1] and "1 offline replicas" in summaries[1]
    assert re.findall(r'data-chart="(\w+)"', page) == ["phases", "replicas", "brokers", "offline"] * 2
    bands = re.findall(r'class="band" data-value="([\w-]+)"', page)
    assert bands[:4] == ["pre-migration", "hybrid", "dual-write", "post-migration"]
    assert len(re.findall(r"<tr><td>", page)) == 11  # every event: 6 of zk, 5 of jbod


def test_the_png_of_the_main_chart(report: Path) -> None:
    pytest.importorskip("matplotlib", reason="report.png needs matplotlib (the analysis extra)")
    width, height, _ = read_png((report / "report.png").read_bytes())
    assert width >= 1000 and height >= 500  # a panel per cluster


CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)


@pytest.mark.slow  # a browser of its own
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium) to render the report")
def test_chromium_draws_the_charts(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    # the networking flags keep a machine without network from refusing Chromium's own connections
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", "--disable-quic",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,2600",
                    f"--screenshot={shot}", (report / "report.html").as_uri()],
                   check=True, capture_output=True, timeout=120)
    width, height, pixels = read_png(shot.read_bytes())
    colors = {**PHASE_COLORS, **DIR_COLORS, **{s[1]: s[2] for s in REPLICA_SERIES + BROKER_SERIES + OFFLINE_SERIES}}
    assert len(set(colors.values())) == len(colors)  # a color found names one series
    counts = {name: pixels.count(bytes.fromhex(color[1:])) for name, color in colors.items()}
    legend = 2 * 11 * 11  # two clusters, an 11 px swatch each
    drawn = {name for name, n in counts.items() if n > legend + 200}  # a band or area, not only its swatch
    assert drawn == {"pre-migration", "hybrid", "dual-write", "post-migration", "native",
                     "not-started", "in-progress", "complete", "assigned", "migrating", "lost", "unfenced",
                     "offline replicas"}, counts  # every broker unfences in the batch it registers in


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, RGB pixels) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + length]
        header, idat = (chunk, idat) if kind == b"IHDR" else (header, idat + chunk if kind == b"IDAT" else idat)
        pos += 12 + length
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color_type in (2, 6) and interlace == 0
    bpp = 3 if color_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    prev, pixels = bytearray(stride), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, ul = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else ul)) & 255
        pixels += [bytes(line[i:i + 3]) for i in range(0, stride, bpp)]
        prev = line
    return width, height, pixels
