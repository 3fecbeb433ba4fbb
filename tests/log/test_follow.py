"""``metalog log follow`` against a log another process appends to, rolls, retains and truncates while it runs.

The follower runs as its own process (``metalog log follow``); this test is the writer: it appends with
``MetadataLog`` (taking the directory's lock, which the follower must not hold), rolls segments (a small
segment size), deletes old ones (retention), writes a batch in two halves (a torn tail in progress) and
truncates batches (what Kafka does to batches a new leader did not have).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from metalog.codec import Uuid, message_class
from metalog.codec.framing import encode_metadata_record
from metalog.errors import CorruptBatchError
from metalog.log import LogConfig, MetadataLog, Mode
from metalog.log import follow as follow_module
from metalog.log.builder import build_data_batch
from metalog.log.follow import LogFollower
from tests.interrupting import interruptible
from tests.waiting import DEADLINE, next_block_in, sleep_calls, wait_for

TS = 1_700_000_000_000
WAIT = DEADLINE  # seconds a step may take: reached only by a follower that is stuck, at any load


def rec(message: str, /, **fields: Any) -> Any:
    return message_class(message)(**fields)


def topic(i: int) -> tuple[Any, int]:
    return rec("TopicRecord", name=f"t{i}", topic_id=Uuid.of(7, i)), 0


class Follower:
    """``metalog log follow ARGS`` in a process of its own, its output read line by line. The test waits for what
    the follower does (``reading``, ``polled``: read from /proc, ``tests.waiting``), never for a fixed time."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "metalog.cli.main", "log", "follow", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=interruptible)
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []
        self.pumps = [threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True),
                      threading.Thread(target=self._pump, args=(self.proc.stderr, self.errors.append), daemon=True)]
        for pump in self.pumps:
            pump.start()

    @staticmethod
    def _pump(stream: Any, put: Any) -> None:
        for line in stream:
            put(line.rstrip("\n"))

    def next(self, timeout: float = WAIT) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line from the follower within {timeout:.0f} s (stderr: {self.errors}, exit "
                                 f"status: {self.proc.poll()})") from None

    def _gone(self) -> str | None:
        """Why the follower is no longer there to wait for, if it is not."""
        status = self.proc.poll()
        return None if status is None else f"the follower exited with status {status}: {self.errors}"

    def reading(self) -> Follower:
        """Wait until the follower is asleep between two looks at the log: it has found where to start (what a
        writer appends from now on is after it) and read what there was."""
        next_block_in(self.proc.pid, sleep_calls(), alive=self._gone)
        return self

    def polled(self) -> None:
        """Wait until the follower has looked at the log once more, wholly after this call: it sleeps, wakes, reads
        what is there (and prints what it prints for it), and sleeps again. What was on disk before the call has
        been read; a line it printed for it comes before any later one."""
        asleep = next_block_in(self.proc.pid, sleep_calls(), alive=self._gone)
        next_block_in(self.proc.pid, sleep_calls(), after=asleep.switches, alive=self._gone)

    def stop(self) -> int:
        """Ctrl-C, then its exit status once everything it printed has been read."""
        self.proc.send_signal(signal.SIGINT)
        return self.ended()

    def ended(self) -> int:
        """Its exit status once it has ended and everything it printed has been read."""
        status = self.proc.wait(timeout=WAIT)
        for pump in self.pumps:
            pump.join(timeout=WAIT)
        return status

    def rest(self) -> list[str]:
        """The lines printed that no ``next`` took (after ``stop`` or ``ended``: all of them)."""
        rest = []
        while not self.lines.empty():
            rest.append(self.lines.get_nowait())
        return rest


def wait_until(condition: Any, what: str = "the condition") -> None:
    wait_for(condition, what, deadline=WAIT)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "log"
    with MetadataLog.open(root, Mode.CREATE, config=LogConfig(segment_bytes=250)) as log:
        log.append([topic(0)], timestamp=TS)
    return root


def offsets_of(follower: Follower, count: int) -> list[int]:
    return [json.loads(follower.next())["baseOffset"] for _ in range(count)]


def test_follows_appends_rolls_and_retention_then_stops_on_ctrl_c(log_dir: Path) -> None:
    f = Follower(str(log_dir), "--from", "0", "--json", "--poll", "0.05")
    assert offsets_of(f, 1) == [0]
    # the follower holds no lock: the writer gets it
    with MetadataLog.open(log_dir, Mode.WRITE, config=LogConfig(segment_bytes=250)) as log:
        for i in range(1, 9):
            log.append([topic(i)], timestamp=TS + i)
        assert offsets_of(f, 8) == list(range(1, 9))
        segments = sorted(p.name for p in (log_dir / "__cluster_metadata-0").glob("*.log"))
        assert len(segments) > 3  # it rolled
        deleted = log.delete_segments_before(7)  # retention, behind the follower
        assert deleted
        for i in range(9, 12):
            log.append([topic(i)], timestamp=TS + i)
        assert offsets_of(f, 3) == [9, 10, 11]
    assert f.stop() == 0
    assert f.errors == []  # no traceback, no notice


@pytest.mark.parametrize("gap", [0.0, 0.002, 0.02])
def test_a_burst_of_interrupts_is_one_ctrl_c(log_dir: Path, gap: float) -> None:
    # timeout -s INT signals the command, then its whole process group: the command gets SIGINT twice, and the
    # second may land while the first unwinds or after follow has returned (CI saw exit status 130 once)
    f = Follower(str(log_dir), "--from", "0", "--changes", "--poll", "0.05")
    assert f.next().startswith("offset 0 at ")
    f.reading()
    end = time.monotonic() + 2.0
    while f.proc.poll() is None and time.monotonic() < end:
        f.proc.send_signal(signal.SIGINT)
        time.sleep(gap)  # the burst's own spacing (what the test varies), no wait for anything
    assert f.ended() == 0
    assert f.errors == []


@pytest.mark.parametrize("torn_when", ["after it started", "before it started"])
def test_a_torn_tail_is_a_write_in_progress(log_dir: Path, torn_when: str) -> None:
    with MetadataLog.open(log_dir) as log:
        end = log.log_end_offset
        segment = log.segments[-1].path
    data = build_data_batch(end, [encode_metadata_record(*topic(50))], epoch=1, timestamp=TS + 50)
    f = None if torn_when == "before it started" else Follower(str(log_dir), "--poll", "0.05").reading()
    with open(segment, "ab") as out:  # the writer's batch, half of it on disk
        out.write(data[:30])
        out.flush()
        if f is None:  # from the end: the end is where the whole batches end, not the file's end
            f = Follower(str(log_dir), "--poll", "0.05").reading()
        f.polled()  # it has read the half batch: it prints nothing for it (the next line is the whole batch's)
        out.write(data[30:])
    line = f.next()
    assert line.startswith(f"baseOffset: {end} lastOffset: {end} count: 1")
    assert '"name":"t50"' in f.next()
    assert f.stop() == 0 and f.errors == [] and f.rest() == []


def test_a_batch_finished_and_rolled_past_between_two_looks_is_read(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the writer finishes the batch the follower saw partial, and rolls, after the follower read the segment and
    # before it looked for a later one: the batch is read, not taken for damage
    root = tmp_path / "log"
    with MetadataLog.open(root, Mode.CREATE) as log:
        log.append([topic(0)], timestamp=TS)
        segment = log.segments[-1].path
    first = build_data_batch(1, [encode_metadata_record(*topic(1))], epoch=1, timestamp=TS + 1)
    second = build_data_batch(2, [encode_metadata_record(*topic(2))], epoch=1, timestamp=TS + 2)
    with open(segment, "ab") as out:
        out.write(first[:30])
    looked = follow_module._segment_bases
    rolled: list[bool] = []

    def finish_and_roll(directory: Path) -> list[int]:
        if not rolled:
            with open(segment, "ab") as out:
                out.write(first[30:])
            (segment.parent / "00000000000000000002.log").write_bytes(second)
            rolled.append(True)
        return looked(directory)

    monkeypatch.setattr(follow_module, "_segment_bases", finish_and_roll)
    seen: list[int] = []
    with LogFollower(root, 0, poll_seconds=0.01) as follower:
        for batch in follower.batches(stop=lambda: len(seen) >= 3):
            seen.append(batch.base_offset)
    assert rolled and seen == [0, 1, 2]


def test_a_partial_batch_the_log_rolled_past_is_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a writer finishes a batch before it rolls (Kafka's UnifiedLog.append rolls, in maybeRoll, before it appends
    # a batch, under the log's lock): a partial batch that stays partial once a later segment exists never will be
    # whole
    root = tmp_path / "log"
    with MetadataLog.open(root, Mode.CREATE) as log:
        log.append([topic(0)], timestamp=TS)
        segment = log.segments[-1].path
    torn = build_data_batch(1, [encode_metadata_record(*topic(1))], epoch=1, timestamp=TS + 1)[:30]
    with open(segment, "ab") as out:
        out.write(torn)
    looked = follow_module._segment_bases

    def roll(directory: Path) -> list[int]:
        later = segment.parent / "00000000000000000002.log"
        if not later.exists():
            later.write_bytes(build_data_batch(2, [encode_metadata_record(*topic(2))], epoch=1, timestamp=TS + 2))
        return looked(directory)

    monkeypatch.setattr(follow_module, "_segment_bases", roll)
    seen: list[int] = []
    with LogFollower(root, 0, poll_seconds=0.01) as follower, pytest.raises(CorruptBatchError) as raised:
        for batch in follower.batches():
            seen.append(batch.base_offset)
    assert seen == [0]
    assert "30 bytes that are not a whole batch end the segment, and the log goes on in " \
           "00000000000000000002.log" in str(raised.value)


def test_changes_appear_when_the_transaction_commits_and_an_aborted_one_never(log_dir: Path) -> None:
    f = Follower(str(log_dir), "--changes", "--poll", "0.05").reading()
    with MetadataLog.open(log_dir, Mode.WRITE) as log:
        log.append([(rec("BeginTransactionRecord", name="x"), 0)], timestamp=TS + 1)
        log.append([topic(1)], timestamp=TS + 2)
        f.polled()  # it has read the open transaction, which publishes nothing: the next line is the commit's
        log.append([(rec("EndTransactionRecord"), 0)], timestamp=TS + 3)
        assert f.next() == "offset 3 at 2023-11-14T22:13:20.003Z"
        assert f.next() == "  topics created: t1"
        log.append([(rec("BeginTransactionRecord", name="y"), 0), topic(2)], timestamp=TS + 4)
        log.append([(rec("AbortTransactionRecord"), 0)], timestamp=TS + 5)
        log.append([topic(3)], timestamp=TS + 6)
        assert f.next() == "offset 7 at 2023-11-14T22:13:20.006Z"
        assert f.next() == "  topics created: t3"
    assert f.stop() == 0 and f.errors == []


def test_changes_publish_before_a_begin_inside_a_batch(log_dir: Path) -> None:
    # Kafka's MetadataBatchLoader.loadBatch publishes the delta when a BeginTransactionRecord starts a transaction
    # in the middle of a batch: the records before it are a state of their own
    f = Follower(str(log_dir), "--changes", "--poll", "0.05").reading()
    with MetadataLog.open(log_dir, Mode.WRITE) as log:
        log.append([topic(1), (rec("BeginTransactionRecord", name="x"), 0), topic(2)], timestamp=TS + 1)
        assert f.next() == "offset 1 at 2023-11-14T22:13:20.001Z"
        assert f.next() == "  topics created: t1"
        f.polled()  # it has read the open transaction, which publishes nothing: the next line is the commit's
        log.append([(rec("EndTransactionRecord"), 0)], timestamp=TS + 2)
        assert f.next() == "offset 4 at 2023-11-14T22:13:20.002Z"
        assert f.next() == "  topics created: t2"
    assert f.stop() == 0 and f.errors == []


def test_changes_from_inside_an_open_transaction(log_dir: Path) -> None:
    with MetadataLog.open(log_dir, Mode.WRITE) as log:
        log.append([(rec("BeginTransactionRecord", name="x"), 0)], timestamp=TS + 1)
        log.append([topic(1)], timestamp=TS + 2)
    f = Follower(str(log_dir), "--changes", "--poll", "0.05").reading()  # at the end, in an open transaction
    with MetadataLog.open(log_dir, Mode.WRITE) as log:
        log.append([(rec("EndTransactionRecord"), 0)], timestamp=TS + 3)
    assert f.next() == "offset 3 at 2023-11-14T22:13:20.003Z"
    assert f.next() == "  topics created: t1"
    assert f.stop() == 0 and f.errors == []


def test_a_truncation_under_the_follower_is_a_notice_and_it_goes_on(log_dir: Path) -> None:
    f = Follower(str(log_dir), "--from", "0", "--json", "--poll", "0.05")
    with MetadataLog.open(log_dir, Mode.WRITE, config=LogConfig(segment_bytes=1 << 20)) as log:
        log.append([topic(1)], timestamp=TS + 1)
        log.append([topic(2)], timestamp=TS + 2)
        assert offsets_of(f, 3) == [0, 1, 2]
        segment = log_dir / "__cluster_metadata-0" / "00000000000000000000.log"
        read = segment.stat().st_size
        log.truncate_to(1)  # batches a new leader did not have
        left = segment.stat().st_size
        wait_until(lambda: f.errors, "the truncation's notice")
        log.append([topic(3)], timestamp=TS + 3)
        assert offsets_of(f, 1) == [1]
    assert f.stop() == 0
    assert f.errors == ["metalog: notice: the log was truncated: offsets 1 to 2, shown above, are gone from it (a "
                        "batch is shown when it is whole on disk; these were not committed) ("
                        f"{segment} is now {left} bytes, shorter than the {read} read)"]


def test_a_batch_appended_right_after_a_truncation_is_shown(log_dir: Path) -> None:
    """A new leader's batch written the moment the follower has seen the truncation (here: from the notice
    itself) is shown. The follower used to say so, then open the log again to find its end: a batch appended in
    between was past that end, and never shown."""
    with MetadataLog.open(log_dir, Mode.WRITE, config=LogConfig(segment_bytes=1 << 20)) as log:
        log.append([topic(1)], timestamp=TS + 1)
        log.append([topic(2)], timestamp=TS + 2)
        notices: list[str] = []

        def new_leader_appends(text: str) -> None:
            notices.append(text)
            log.append([topic(3)], timestamp=TS + 3)

        polls = itertools.count()
        with LogFollower(log_dir, 0, poll_seconds=0, on_notice=new_leader_appends) as follower:
            batches = follower.batches(stop=lambda: next(polls) > 100)  # a poll reads all there is: 100 at most
            assert [next(batches).base_offset for _ in range(3)] == [0, 1, 2]
            log.truncate_to(1)
            after = [batch.base_offset for batch in batches]
    assert len(notices) == 1 and notices[0].startswith("the log was truncated: offsets 1 to 2, shown above")
    assert after == [1]


def test_segments_deleted_before_they_were_read_are_a_gap(log_dir: Path) -> None:
    f = Follower(str(log_dir), "--from", "0", "--json", "--poll", "0.05")
    assert offsets_of(f, 1) == [0]
    f.proc.send_signal(signal.SIGSTOP)  # the follower falls behind
    try:
        with MetadataLog.open(log_dir, Mode.WRITE, config=LogConfig(segment_bytes=250)) as log:
            for i in range(1, 9):
                log.append([topic(i)], timestamp=TS + i)
            log.delete_segments_before(7)
    finally:
        f.proc.send_signal(signal.SIGCONT)
    assert f.ended() == 1
    assert f.errors[0].startswith("metalog: error: ") and "are missing (deleted before they were read" in f.errors[0]


@pytest.mark.parametrize("how", ["the directory deleted", "its segments deleted"])
def test_a_log_that_goes_away_ends_the_follower_with_one_line(log_dir: Path, how: str) -> None:
    """Before, it kept polling a directory that was no longer there, silently, for ever."""
    f = Follower(str(log_dir), "--from", "0", "--json", "--poll", "0.05")
    assert offsets_of(f, 1) == [0]
    if how == "the directory deleted":  # at once: a rename, then the deletion (rmtree alone empties it file by file)
        shutil.rmtree(log_dir.rename(log_dir.with_name("deleted")))
    else:
        for segment in (log_dir / "__cluster_metadata-0").glob("*.log"):
            segment.unlink()
    assert f.ended() == 1
    gone = "no longer exists" if how == "the directory deleted" else "holds no segment any more"
    assert f.errors == [f"metalog: error: {log_dir / '__cluster_metadata-0'}: the log is gone: the directory {gone} "
                        "(deleted or moved while it was followed); the last offset read is 0"]


def test_the_follower_writes_nothing(log_dir: Path) -> None:
    directory = log_dir / "__cluster_metadata-0"

    def files() -> dict[str, tuple[int, int]]:
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in log_dir.rglob("*")}

    before = files()
    f = Follower(str(log_dir), "--from", "0", "--poll", "0.05")
    assert f.next().startswith("baseOffset: 0") and f.next().startswith("| offset: 0")
    f.polled()  # it has looked again, and found nothing new
    assert f.stop() == 0 and f.rest() == []
    assert files() == before and directory.is_dir()


def test_from_a_time_and_the_library(log_dir: Path) -> None:
    with MetadataLog.open(log_dir, Mode.WRITE) as log:
        for i in range(1, 5):
            log.append([topic(i)], timestamp=TS + i * 1000)
    f = Follower(str(log_dir), "--from", f"{TS + 2500}ms", "--json", "--poll", "0.05")
    assert offsets_of(f, 2) == [3, 4]
    assert f.stop() == 0
    seen: list[int] = []
    with LogFollower(log_dir, 2, poll_seconds=0.01) as follower:
        for batch in follower.batches(stop=lambda: len(seen) >= 3):
            seen.append(batch.base_offset)
    assert seen == [2, 3, 4]


def test_from_past_the_end_is_an_error(log_dir: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "metalog.cli.main", "log", "follow", str(log_dir), "--from", "9"],
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 1 and done.stderr == (
        f"metalog: error: {log_dir / '__cluster_metadata-0'}: offset 9 is past the end of the log (the next offset "
        "is 1)\n")


def test_help_has_examples() -> None:
    done = subprocess.run([sys.executable, "-m", "metalog.cli.main", "log", "follow", "--help"], capture_output=True,
                          text=True, timeout=WAIT)
    assert done.returncode == 0 and "examples:" in done.stdout and "--changes" in done.stdout
    assert os.linesep in done.stdout
