"""The start states of a cut cluster's later ranges, replayed by a process of the Spark driver's while its JVM
starts (``spark_meanwhile.MeanwhileStarts`` starts it, ``spark.driver_starts`` plans it).

A range after a cluster's first catches up from its origin before it replays its own batches (``parallel.caught_up``:
the loader alone over every batch before it, 0.54 s of CPU for the 5M-record log's cut at 3.07M records), on the
critical path of one large log. Between the JVM's launch and the first task (about 1.9 s) a core of two is mostly
idle: the SparkContext's start and the workers' daemon each keep one busy. A child process (not a thread: the
SparkContext's calls into the JVM would each wait for Python's lock) replays each planned catch-up there, from as
soon as it is planned, and writes it as a start state file (``start_files``), whose lock it holds until the file is
in place: the range's task reads it, waiting for it if need be, or, where the process ended without it, catches up
itself as before. The ranges are then cut equal, as neither catches up.

The child runs at the driver's priority: at a lower one, on a loaded machine, the range waiting for it would leave
its core to whatever else runs while the child starved (nice 19 tried: the child's 0.6 s of work then spread over
the ranges' whole replay, at load 3-4).

Only on a local master: the files are in a temporary directory of this machine.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from metalog.analysis.engines.start_files import lock_of, write_start
from metalog.replay.points import StartPoint

__all__ = ["StartJob", "StartsProcess", "main"]


@dataclass(frozen=True)
class StartJob:
    """A range's start state to replay: the batches of the log at ``path`` from ``point`` (None: the log's
    start) up to offset ``lo``, written to ``image`` (``start_files``)."""

    path: str
    point: StartPoint | None
    lo: int
    image: str

    def encoded(self) -> dict[str, object]:
        point = None if self.point is None else \
            [self.point.kind, self.point.offset, None if self.point.path is None else str(self.point.path)]
        return {"path": self.path, "point": point, "lo": self.lo, "image": self.image}

    @classmethod
    def decoded(cls, job: dict[str, object]) -> StartJob:
        point = job["point"]
        start = None
        if isinstance(point, list):
            kind, offset, path = point
            start = StartPoint(str(kind), int(offset), None if path is None else Path(path))
        return cls(str(job["path"]), start, int(str(job["lo"])), str(job["image"]))


class StartsProcess:
    """The child process replaying ``jobs`` (``main``): each job's lock (``start_files.lock_of``) taken by ``hold``
    (from then on its readers wait for it, never guessing), handed to the child by ``spawn``, which holds it until
    its file is in place; ``close`` ends the child if it still runs, lets go of locks never handed over, and
    removes the directory."""

    def __init__(self, root: Path, jobs: Sequence[StartJob]) -> None:
        self.root = root
        self.jobs = list(jobs)
        self.child: subprocess.Popen[bytes] | None = None
        self._locks: list[int] = []

    @staticmethod
    def directory() -> Path:
        """A new directory for the start states' files."""
        return Path(tempfile.mkdtemp(prefix="metalog-starts-"))

    def hold(self) -> None:
        """Every job's lock taken (before anyone may read)."""
        for job in self.jobs:
            fd = os.open(lock_of(Path(job.image)), os.O_CREAT | os.O_RDWR, 0o600)
            self._locks.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)

    def spawn(self) -> None:
        """The child started with the locks ``hold`` took (once; its copies hold them from then on)."""
        locks, self._locks = self._locks, []
        if not locks:
            return
        try:
            encoded = [{**job.encoded(), "lock": fd} for job, fd in zip(self.jobs, locks, strict=True)]
            # its own process group: Ctrl-C at the terminal is the driver's to handle (``close`` ends the child);
            # -P: the working directory is not put first on its path (a json.py there would be imported)
            self.child = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__, json.dumps(encoded)], pass_fds=locks, process_group=0,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:
            pass  # (no process: the locks go below, and each range catches up itself)
        finally:
            for fd in locks:
                os.close(fd)

    def end(self) -> None:
        """The child ended, if it still runs, and the locks it was never handed let go (its start states unused,
        or the run over)."""
        for fd in self._locks:
            os.close(fd)
        self._locks = []
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
        if self.child is not None:
            self.child.wait()

    def close(self) -> None:
        self.end()
        shutil.rmtree(self.root, ignore_errors=True)


def main(argv: Sequence[str]) -> int:
    """The child: each job's start state caught up and written, its lock let go as it is in place; the first
    failure ends the process (its readers then catch up themselves, and say what failed)."""
    from metalog.analysis.engines.parallel import caught_up

    for job in json.loads(argv[0]):
        start = StartJob.decoded(job)
        write_start(Path(start.image), caught_up(start.path, start.point, start.lo))
        os.close(int(job["lock"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
