"""The start states of a cut cluster's later ranges, written by a process of the Spark driver's while its JVM
starts (``spark_starts``, ``start_files``, ``spark.driver_starts``), in this process: the state written is the one
the range's task would catch up to, a reader waits for its writer, a writer that ends without it leaves the range
to catch up itself, and the plan is the engine's own."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from metalog.analysis.engines import parallel, start_files
from metalog.analysis.engines.parallel import Origin, caught_up, log_outline, plan, split_ranges
from metalog.analysis.engines.spark import ClusterRanges, driver_starts, range_counts
from metalog.analysis.engines.spark_starts import StartJob, StartsProcess
from metalog.analysis.engines.start_files import lock_of, read_start, write_start
from metalog.generate.generator import HistorySettings
from metalog.generate.writer import write_history
from metalog.replay.history import MetadataHistory
from tests.analysis.engines.test_parallel import transactions_and_topic_configs


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "mixed"
    write_history(path, 61, HistorySettings(brokers=3, topics=3, partitions=2, records=3000, scenario="mixed"),
                  snapshot_every=10**9)
    return path


def cluster(path: Path, name: str = "c") -> ClusterRanges:
    outline = log_outline(path)
    return ClusterRanges(str(path.resolve()), name, outline.first, outline.last, outline.points)


def batch_starts(path: Path) -> list[int]:
    with MetadataHistory(path) as history:
        return [scanned[0] for scanned in history.log.scan(history.log.log_start_offset)]


def test_a_start_state_read_back_is_the_one_written_an_open_transaction_included(tmp_path: Path) -> None:
    """Every batch start of a log with transactions across batches: the state read back is the one caught up
    to, published and pending (a transaction open there); a file of the wrong kind is one line."""
    log = transactions_and_topic_configs(tmp_path / "tx")
    opened = 0
    for n, lo in enumerate(batch_starts(log)[1:]):
        start = caught_up(log, None, lo)
        path = tmp_path / f"{n}.start"
        write_start(path, start)
        lock_of(path).touch()
        assert read_start(path) == start
        opened += start.transaction is not None
    assert opened  # (the open transaction's image was carried)
    (tmp_path / "bad.start").write_bytes(b"\0" * 20)
    lock_of(tmp_path / "bad.start").touch()
    with pytest.raises(start_files.ImageFormatError, match="bad.start"):
        read_start(tmp_path / "bad.start")


def test_a_reader_waits_for_the_writer_that_holds_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            mixed: Path) -> None:
    """The reader takes the lock the writer holds until its file is in place: it finds the file written after it
    began to wait (a reader that looked without waiting would find none, and catch up itself)."""
    path = tmp_path / "1.start"
    held = os.open(lock_of(path), os.O_CREAT | os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    waiting, flock = threading.Event(), fcntl.flock

    def flock_told(fd: int, how: int) -> Any:
        if how == fcntl.LOCK_SH:
            waiting.set()
        return flock(fd, how)

    monkeypatch.setattr(start_files.fcntl, "flock", flock_told)
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(read_start(path)))
    reader.start()
    assert waiting.wait(60), "the reader did not wait for the lock"
    start = caught_up(mixed, None, 1000)
    write_start(path, start)
    os.close(held)
    reader.join(60)
    assert got == [start]


def test_without_a_lock_or_a_file_there_is_no_start_state(tmp_path: Path) -> None:
    assert read_start(tmp_path / "none.start") is None  # nobody was to write it
    lock_of(tmp_path / "gone.start").touch()  # its writer let go without it
    assert read_start(tmp_path / "gone.start") is None


def test_the_drivers_process_writes_what_the_ranges_would_catch_up_to(tmp_path: Path, mixed: Path) -> None:
    """The child process (``spark_starts.main``) writes each job's start state, the one ``caught_up`` gives; a
    job whose log cannot be read ends the process, its readers and those after it finding nothing (they catch up
    themselves and say why)."""
    root = StartsProcess.directory()
    starts = [1000, 2000]
    jobs = [StartJob(str(mixed), None, lo, str(root / f"0-{lo}.start")) for lo in starts]
    jobs.append(StartJob(str(tmp_path / "missing"), None, 10, str(root / "1-10.start")))
    jobs.append(StartJob(str(mixed), None, 2500, str(root / "0-2500.start")))
    process = StartsProcess(root, jobs)
    process.hold()
    process.spawn()
    try:
        assert [read_start(Path(job.image)) for job in jobs[:2]] == [caught_up(mixed, None, lo) for lo in starts]
        assert read_start(Path(jobs[2].image)) is None and read_start(Path(jobs[3].image)) is None
        assert process.child is not None and process.child.wait(60) != 0
    finally:
        process.close()
    assert not root.exists()


def test_a_range_whose_start_state_the_driver_wrote_does_not_catch_up(tmp_path: Path, mixed: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``parallel.replay_from`` with an origin whose ``image`` is written replays the range from it (before: the
    task caught up itself); the same rows as the range caught up; where the file is not there, it catches up."""
    c = cluster(mixed)
    (lo, hi), origin = split_ranges(c.first, c.last, 2)[1], Origin(None, (), catch_up=True)
    image = tmp_path / "0.start"
    lock_of(image).touch()

    def rows(origin: Origin) -> list[Any]:
        got: list[Any] = []
        parallel.replay_from(parallel.RangeReplay(mixed, "c", lo, hi, log_start=False), origin,
                             parallel.RangeDelta(), got.append)
        return [(chunk.table.name, len(chunk)) for chunk in got]

    expected, start = rows(origin), caught_up(mixed, None, lo)
    caught = parallel._caught_up
    calls: list[int] = []
    monkeypatch.setattr(parallel, "_caught_up", lambda *a: calls.append(1) or caught(*a))
    assert rows(Origin(None, (), catch_up=True, image=str(image))) == expected and calls == [1]  # (not written)
    write_start(image, start)
    assert rows(Origin(None, (), catch_up=True, image=str(image))) == expected and calls == [1]


def test_the_driver_plans_the_ranges_the_engine_plans_cut_equal(tmp_path: Path, mixed: Path) -> None:
    """On 2 cores a lone cluster is cut in two equal ranges whose second's start state the driver writes; its
    origins are those ``parallel.plan`` gives those ranges. None on one core, none beyond the budget of records
    to catch up; on more cores every later range's."""
    c = cluster(mixed)
    (starts,) = driver_starts([c], 2, tmp_path)
    assert list(starts.bounds) == split_ranges(c.first, c.last, 2) and range_counts([c.size], 2) == [2]
    assert [o.image for o in starts.origins] == [None, str(tmp_path / f"0-{starts.bounds[1][0]}.start")]
    assert plan(starts.bounds, c.first, c.points) == [Origin(o.point, o.pieces, o.catch_up) for o in starts.origins]
    assert starts.jobs(c.path) == [StartJob(c.path, None, starts.bounds[1][0], str(starts.origins[1].image))]
    assert driver_starts([c], 1, tmp_path) == []
    assert driver_starts([c], 2, tmp_path, budget=starts.bounds[1][0] - 1) == []
    (more,) = driver_starts([c], 8, tmp_path)  # (as many ranges as catch up: ``range_counts``' at most)
    assert len(more.bounds) == range_counts([c.size], 8)[0] > 2
    assert [o.image is not None for o in more.origins] == [False] + [True] * (len(more.bounds) - 1)


def test_a_module_in_the_working_directory_does_not_shadow_the_processs_own(tmp_path: Path, mixed: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The child is ``python -P -m``: a ``json.py`` in the directory the command runs in is not what it imports
    (before: ``-m`` put the working directory first on its path, and the child failed, each range catching up
    itself)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "json.py").write_text("raise SystemExit(3)\n")
    monkeypatch.chdir(work)
    root = StartsProcess.directory()
    job = StartJob(str(mixed), None, 1000, str(root / "0-1000.start"))
    process = StartsProcess(root, [job])
    process.hold()
    process.spawn()
    try:
        assert read_start(Path(job.image)) == caught_up(mixed, None, 1000)
        assert process.child is not None and process.child.wait(60) == 0
    finally:
        process.close()
