"""``metalog log follow``: tail a live metadata log as the controller writes it."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metalog.replay.points import Point
    from metalog.secrets import Secrets

FOLLOW_EXAMPLES = """\
examples:
  metalog log follow /var/lib/kafka/metadata                # each new batch, as kafka-dump-log prints it
  metalog log follow LOGDIR --from start --json             # the whole log, then each new batch, as JSON
  metalog log follow LOGDIR --changes                       # what each new published state changed
  metalog log follow LOGDIR --from 2024-05-01T10:30:00Z --changes

Reads the segment files read-only, takes no lock and writes nothing. A batch is printed once it is whole on
disk; a partial batch at the end is a write in progress, printed when it is whole. Segment rolls and retention
(old segments deleted) are followed. --changes prints the changes of each state Kafka's loader publishes
(metalog diff's form): a metadata transaction's records appear when the batch that commits it lands, an
aborted one never. A file does not say which batches the quorum committed: when Kafka truncates batches a new
leader did not have, a notice on stderr says which offsets went. Ctrl-C stops (exit status 0). --from takes a
POINT: %s. It starts at the batch holding an offset, at the first batch whose
timestamp is at or after a time, at the log's first batch (start) or at what is written from now on (end, the
default).
"""
POLL_MOST = 86_400  # a day between looks: more is surely a slip (and time.sleep overflows far beyond)


def add_follow(verbs: Any, fmt: type[argparse.HelpFormatter]) -> None:
    from metalog.cli import options
    from metalog.replay.points import END, POINT_FORMS

    p = verbs.add_parser("follow", help="print each new batch (or state change) of a live log as it is written",
                         description="Tail a metadata log as a controller writes it.",
                         epilog=FOLLOW_EXAMPLES % POINT_FORMS, formatter_class=fmt)
    p.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0)")
    p.add_argument("--from", dest="start", type=options.point, default=END, metavar="POINT",
                   help="start at the batch holding this offset, the first batch at or after this time, the log's "
                        "first batch (start) or its end (end, the default)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="one JSON object per batch")
    mode.add_argument("--changes", action="store_true", help="the changes of each published state")
    p.add_argument("--poll", type=options.seconds("how often to look", POLL_MOST), default=0.2, metavar="SECONDS",
                   help=f"how often to look (default 0.2, at most {POLL_MOST:,})")
    options.show_secrets(p)
    p.set_defaults(func=_follow, reports_recovery=True)  # a torn tail is a write in progress here, not news


def _start(logdir: str, point: Point) -> int | str:
    """Where LogFollower starts: an offset, or END."""
    from metalog.log.follow import END, offset_at_or_after
    from metalog.replay.points import INT64_MIN

    if point.kind == "end":
        return END
    if point.kind == "start":  # the first batch of all: none has a timestamp before int64's least
        return offset_at_or_after(logdir, INT64_MIN)
    assert point.value is not None
    return point.value if point.kind == "offset" else offset_at_or_after(logdir, point.value)


def _follow(args: argparse.Namespace) -> int:
    from metalog.cli import options
    from metalog.cli.notices import notice
    from metalog.cli.options import secrets_of

    options.log_directory(args.logdir, "log follow")
    stop = OneCtrlC.install()
    try:
        start = _start(args.logdir, args.start)
        if args.changes:
            _changes(args.logdir, start, args.poll, notice, secrets_of(args))
        else:
            _batches(args.logdir, start, args.poll, args.json, notice, secrets_of(args))
    except KeyboardInterrupt:  # Ctrl-C: the way to stop following (SIGINT stays blocked: the command is ending)
        return 0
    finally:
        if stop is not None:
            stop.uninstall()
    return 0


class OneCtrlC:
    """SIGINT's handler while following: Ctrl-C stops, once, and the rest of a burst is the same Ctrl-C.

    One stop can arrive as several signals: ``timeout -s INT`` signals the command and then its whole process
    group (so the command twice), and an impatient person presses Ctrl-C twice. A second KeyboardInterrupt
    raised while the first unwinds, or after ``_follow`` has returned, would end the command with status 130.

    The first signal blocks SIGINT, then raises KeyboardInterrupt; later ones stay pending, never delivered. The
    handler stays installed and does nothing after the first: CPython runs a Python handler some bytecodes after
    its C handler noted the signal, so a second SIGINT noted while the first one's handler runs is handed to
    whatever handler is installed by then. Were that SIG_IGN, CPython would print "Signal 2 ignored due to race
    condition" on stderr (a burst with no gap did, once, when the first signal switched SIGINT to SIG_IGN).
    """

    def __init__(self, before: Any) -> None:
        self.before = before
        self.interrupted = False

    @classmethod
    def install(cls) -> OneCtrlC | None:
        """The handler, installed where Python's own Ctrl-C handler is (a caller's own handler is left alone)."""
        if threading.current_thread() is not threading.main_thread() \
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        stop = cls(signal.default_int_handler)
        signal.signal(signal.SIGINT, stop)
        return stop

    def __call__(self, signum: int, frame: Any) -> None:
        if self.interrupted:  # the rest of a burst, noted before the block took
            return
        self.interrupted = True
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        else:  # (no signal masks: Windows) ignored from now on
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    def uninstall(self) -> None:
        """Not interrupted: the caller's handler again (interrupted: the command is ending, SIGINT stays blocked)."""
        before = self.before
        if not self.interrupted and signal.getsignal(signal.SIGINT) is self:
            signal.signal(signal.SIGINT, before)


def _batches(logdir: str, start: int | str, poll: float, as_json: bool, notice: Any, secrets: Secrets) -> None:
    from metalog.log import dump
    from metalog.log.follow import LogFollower

    out = sys.stdout
    with LogFollower(logdir, start, poll_seconds=poll, on_notice=notice) as follower:
        for batch in follower.batches():
            if as_json:
                obj = {"file": batch.source, **dump.batch_json(batch, secrets=secrets)}
                out.write(json.dumps(obj, separators=(",", ":")) + "\n")
            else:
                out.write(dump.batch_text(batch) + "\n")
                out.writelines(dump.record_text(batch, r, secrets=secrets) + "\n" for r in batch.records())
            out.flush()


def _changes(logdir: str, start: int | str, poll: float, notice: Any, secrets: Secrets) -> None:
    from metalog.replay.diff import diff_images, render_diff
    from metalog.replay.follow import follow_states
    from metalog.replay.points import format_time

    out = sys.stdout
    for published in follow_states(logdir, start, poll_seconds=poll, on_notice=notice):
        d = diff_images(published.before, published.after, secrets)
        if d.empty:
            continue
        lines = render_diff(d).splitlines()[1:]  # (its first line names the two offsets)
        out.write(f"offset {published.after.offset} at {format_time(published.batch.max_timestamp)}\n")
        out.writelines(line + "\n" for line in lines)
        out.flush()
