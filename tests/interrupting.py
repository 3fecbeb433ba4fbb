"""Ctrl-C for a child process that a test interrupts: SIGINT as a terminal gives it to the job in its foreground.

A suite started as a background job of a shell without job control (``bash scripts/test.sh > log &`` in a script, or
under ``nohup``-like wrappers) inherits SIGINT ignored, and so do pytest's workers: Python keeps an ignored SIGINT
ignored (as a command run in the background should). An ignored disposition, and a blocked signal mask, survive
``fork`` and ``exec``, so every process a worker starts ignores the SIGINT its test sends, and the command runs on
to its end: an analysis exits 0, the shell never answers Ctrl-C. Only in a worker where a test had installed a
Python handler for SIGINT (a caught signal's action is reset by ``exec``: an open Spark session installs one, as
``metalog analyze`` on Spark does) did such a child get SIGINT's default action, so these tests failed in some
whole-suite runs and passed alone.

``interruptible`` gives the child SIGINT's default action, unblocked, whatever the worker inherited: as a
``preexec_fn`` (between fork and exec) or called in the child of ``pty.fork`` before it execs."""

from __future__ import annotations

import signal


def interruptible() -> None:
    """In a child process before it execs: SIGINT's default action, and not blocked (a Python started so installs
    its own handler: Ctrl-C is a KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
