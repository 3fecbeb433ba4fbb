"""What a child process is waiting for, read from Linux's /proc: a test that drives a command in a process of its
own waits until the command is where the step needs it (asleep between two looks at a log, or blocked reading
its terminal), never for a fixed time.

``/proc/PID/syscall`` names the system call a blocked process is in; ``voluntary_ctxt_switches`` in
``/proc/PID/status`` counts how many times it has blocked so far, so a second sleep is told from the first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

# the system calls by number, per machine: clock_nanosleep and nanosleep (time.sleep); select, pselect6, poll and
# ppoll (readline waiting for a key)
_SLEEPS = {"x86_64": frozenset({35, 230}), "aarch64": frozenset({101, 115})}
_SELECTS = {"x86_64": frozenset({7, 23, 270, 271}), "aarch64": frozenset({72, 73})}
DEADLINE = 120.0  # seconds: reached only by a command that is stuck (a niced interpreter at load 20 takes ~30 s)


@dataclass(frozen=True)
class Blocked:
    """A process blocked in a system call: which, and how many times it had blocked by then (this time included)."""

    syscall: int
    switches: int


def _machine() -> str:
    machine = os.uname().machine
    if machine not in _SLEEPS or not Path("/proc/self/syscall").exists():
        pytest.skip(f"needs Linux's /proc/PID/syscall on x86_64 or aarch64 (this is {machine})")
    return machine


def sleep_calls() -> frozenset[int]:
    """The system calls of ``time.sleep`` on this machine."""
    return _SLEEPS[_machine()]


def select_calls() -> frozenset[int]:
    """The system calls that wait for a file descriptor (readline's select) on this machine."""
    return _SELECTS[_machine()]


def _switches(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no voluntary_ctxt_switches")


def blocked(pid: int) -> Blocked | None:
    """The system call ``pid`` is blocked in, read while it stayed in it; None while it runs (or has exited)."""
    try:
        before = _switches(pid)
        call = Path(f"/proc/{pid}/syscall").read_text().split()
        after = _switches(pid)
    except (FileNotFoundError, ProcessLookupError):
        return None
    if before != after or not call or not call[0].isdigit():  # "running", or it woke up while read
        return None
    return Blocked(int(call[0]), before)


def wait_for(condition: Callable[[], bool], what: str, alive: Callable[[], str | None] = lambda: None,
             deadline: float = DEADLINE) -> None:
    """Until ``condition()``; an AssertionError naming ``what`` when the deadline passes first, or as soon as
    ``alive()`` says why the process is gone."""
    end = time.monotonic() + deadline
    while not condition():
        gone = alive()
        assert gone is None, f"waiting for {what}: {gone}"
        assert time.monotonic() < end, f"waiting for {what}: nothing after {deadline:.0f} s"
        time.sleep(0.01)


def next_block_in(pid: int, calls: frozenset[int], *, after: int = -1,
                  alive: Callable[[], str | None] = lambda: None) -> Blocked:
    """Wait until ``pid`` is blocked in one of ``calls`` and had blocked more than ``after`` times by then (so a
    later block than one seen before); ``alive`` as for ``wait_for``."""
    found: list[Blocked] = []

    def there() -> bool:
        now = blocked(pid)
        if now is not None and now.syscall in calls and now.switches > after:
            found.append(now)
            return True
        return False

    wait_for(there, f"process {pid} to block in system call {sorted(calls)}", alive)
    return found[0]
