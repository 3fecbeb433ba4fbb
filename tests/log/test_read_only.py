"""Readers never write: opening a log is read-only unless the caller asks to write, and no reading verb or API
creates, truncates, locks, cleans or rebuilds a file of it.

The log here holds what an open for writing would change: a torn tail (Kafka's recovery cuts it), the leftovers of
an interrupted write (.deleted, .swap, .cleaned, .tmp, a snapshot's .part: cleaned), no partition.metadata and no
leader-epoch-checkpoint (written), indexes missing or torn (rebuilt), no .lock (taken). Each reader must leave
every file's bytes and every file's and directory's mtime as they were. Before, ``MetadataLog.open(path)`` opened
for writing: a tool reading a live broker's metadata directory cut its segment and wrote ``.lock`` and
``partition.metadata`` there.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.engines.python import PythonEngine
from metalog.analysis.engines.request import AnalysisRequest
from metalog.log import Check, MetadataLog, Mode
from metalog.log.follow import LogFollower
from metalog.log.verify import verify_log
from metalog.replay.history import MetadataHistory
from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotReader, SnapshotWriter
from metalog.state.records import image_records
from tests.interrupting import interruptible
from tests.log.damage import PARTITION_DIR, build_log
from tests.log.test_damage import run

LEFTOVERS = ["00000000000000000000.log.deleted", "00000000000000000039.index.swap", "00000000000000000039.log.cleaned",
             "quorum-state.tmp", "00000000000000000005-0000000001.checkpoint.part"]


@pytest.fixture(scope="module")
def messy_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log as a crash and a careless copy leave it (see the module's docstring), with a snapshot to read."""
    path = tmp_path_factory.mktemp("messy")
    batches = build_log(path, records=140, seed=11, segment_bytes=3500, index_interval_bytes=700,
                        batches_per_epoch=25)
    part = path / PARTITION_DIR
    with MetadataHistory(path) as history:
        image = history.state_at(batches[40].last_offset).image
    with SnapshotWriter(part, SnapshotId(image.offset + 1, 2), SnapshotHeader(last_contained_log_timestamp=0),
                        time_ms=0) as w:
        w.append(image_records(image))
        w.freeze()
    segments = sorted(part.glob("*.log"))
    with open(segments[-1], "r+b") as f:  # a torn tail
        f.truncate(segments[-1].stat().st_size - 10)
    segments[0].with_suffix(".timeindex").unlink()
    segments[1].with_suffix(".index").write_bytes(b"\x00" * 5)
    (part / "partition.metadata").unlink()
    (part / "leader-epoch-checkpoint").unlink()
    for name in LEFTOVERS:
        (part / name).write_bytes(b"leftover")
    (path / ".lock").unlink()  # the writer's, left behind as Kafka leaves it: a copy may not have it
    return path


@pytest.fixture
def messy(messy_once: Path, tmp_path: Path) -> Path:
    """A copy of it for each test: a reader that did write must not hide it from the next."""
    work = tmp_path / "messy"
    shutil.copytree(messy_once, work)
    return work


def tree(path: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file's bytes and mtime, every directory's mtime (a file made or removed in it changes that)."""
    out: dict[str, tuple[bytes | None, int]] = {".": (None, path.stat().st_mtime_ns)}
    for p in sorted(path.rglob("*")):
        out[str(p.relative_to(path))] = (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
    return out


def _follow(path: Path) -> tuple[int, str]:
    """``log follow --from 0`` until it has printed a batch, then Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-m", "metalog.cli.main", "log", "follow", str(path), "--from", "0",
                             "--poll", "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                            preexec_fn=interruptible)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, first + err


VERBS: dict[str, list[str]] = {
    "replay": ["replay", "{log}"],
    "replay --at": ["replay", "{log}", "--at", "60"],
    "diff": ["diff", "{log}", "--from", "0", "--to", "end"],
    "history": ["history", "{log}", "--controller"],
    "shell": ["shell", "{log}", "ls", "/image/topics"],
    "log dump": ["log", "dump", "{log}"],
    "log dump an index": ["log", "dump", "{log}/__cluster_metadata-0/00000000000000000039.index"],
    "log verify": ["log", "verify", "{log}"],
    "log recover --dry-run": ["log", "recover", "--dry-run", "{log}"],
    "log recover --repair --dry-run": ["log", "recover", "--repair", "--dry-run", "{log}"],
    "snapshot list": ["snapshot", "list", "{log}"],
    "snapshot verify": ["snapshot", "verify", "{snapshot}"],
    "analyze": ["analyze", "{log}", "--engine", "python", "--out", "{out}"],
}


@pytest.mark.parametrize("verb", VERBS)
def test_no_reading_verb_changes_the_log_directory(messy, tmp_path, capsys, verb):
    before = tree(messy)
    snapshot = next((messy / PARTITION_DIR).glob("*.checkpoint"))
    run([a.format(log=messy, out=tmp_path / "out", snapshot=snapshot) for a in VERBS[verb]], capsys)
    assert tree(messy) == before


def test_log_follow_changes_nothing(messy):
    before = tree(messy)
    rc, said = _follow(messy)
    assert rc == 0 and said.startswith("baseOffset: "), said
    assert tree(messy) == before


def _records(log: MetadataLog) -> Any:
    return [r.offset for r in log.records()]


API: dict[str, Callable[[Path], Any]] = {
    "MetadataLog.open": lambda path: MetadataLog.open(path).close(),
    "MetadataLog.open, records": lambda path: _with_log(path, _records),
    "MetadataLog.open(check=Check.ALL)": lambda path: MetadataLog.open(path, check=Check.ALL).close(),
    "MetadataLog.open(check=Check.REPAIR)": lambda path: MetadataLog.open(path, check=Check.REPAIR).close(),
    "MetadataHistory.state_at": lambda path: _history(path),
    "verify_log": verify_log,
    "SnapshotReader.verify": lambda path: SnapshotReader(next((path / PARTITION_DIR).glob("*.checkpoint"))).verify(),
    "LogFollower": lambda path: _follower(path),
    "PythonEngine.analyze": lambda path: _analyze(path),
}


def _with_log(path: Path, read: Callable[[MetadataLog], Any]) -> Any:
    with MetadataLog.open(path) as log:
        return read(log)


def _analyze(path: Path) -> Any:
    with tempfile.TemporaryDirectory() as out:
        return PythonEngine().analyze(AnalysisRequest.of([f"c={path}"], out))


def _history(path: Path) -> Any:
    with MetadataHistory(path) as history:
        return history.state_at().image


def _follower(path: Path) -> Any:
    started = time.monotonic()
    with LogFollower(path, 0, poll_seconds=0.01) as follower:
        return [b.base_offset for b in follower.batches(stop=lambda: time.monotonic() - started > 0.5)]


@pytest.mark.parametrize("api", API)
def test_no_read_only_open_changes_the_log_directory(messy, api):
    before = tree(messy)
    API[api](messy)
    assert tree(messy) == before


def test_a_read_only_open_reports_the_torn_tail_and_leaves_it(messy):
    with MetadataLog.open(messy) as log:
        assert len(log.recovery.truncated) == 1
        assert log.recovery.truncated[0].startswith("(read-only, the file is unchanged) ")
        assert not log.recovery.cleaned and not log.writable


def test_the_writer_asks_for_it(messy, tmp_path):
    """``Mode.WRITE``: the lock, the leftovers cleaned, the torn tail cut, the files written, as Kafka's recovery
    does when a broker starts."""
    work = messy
    with MetadataLog.open(work, Mode.WRITE) as log:
        assert len(log.recovery.truncated) == 1 and not log.recovery.truncated[0].startswith("(read-only")
        assert sorted(Path(p).name for p in log.recovery.cleaned) == sorted(LEFTOVERS)
        assert (work / ".lock").exists() and (work / PARTITION_DIR / "partition.metadata").exists()
