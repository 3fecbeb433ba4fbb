"""``metalog shell``: one-shot commands (-c, or one command as kafka-metadata-shell takes it), commands from
stdin, and the interactive shell on a terminal (line editing, history, tab completion, Ctrl-C, Ctrl-D)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.running import help_text, run
from tests.interrupting import interruptible
from tests.waiting import DEADLINE, blocked, select_calls, wait_for

WAIT = DEADLINE  # seconds a step may take: reached only by a shell that is stuck, at any load


def test_help_has_examples(capsys) -> None:
    out = help_text(["shell"], capsys)
    assert "examples:" in out and "-c 'ls /image/topics/byName" in out and "history PATH" in out


def test_commands_separated_by_semicolons(jbod_dir, capsys) -> None:
    code, out, err = run(["shell", str(jbod_dir), "-c", "cd /image/cluster; ls brokers; pwd"], capsys)
    assert (code, out, err) == (0, "1\n2\n3\n/image/cluster\n", "")


def test_a_failed_command_makes_the_exit_status_one_and_the_others_still_run(jbod_dir, capsys) -> None:
    code, out, err = run(["shell", str(jbod_dir), "-c", "cat /nope; cat /image/topics/byName/foo/name"], capsys)
    assert (code, out, err) == (1, "foo\n", "cat: /nope: No such file or directory.\n")


def test_one_command_as_kafkas_shell_takes_it_and_at_after_the_logdir(jbod_dir, capsys) -> None:
    code, out, err = run(["shell", str(jbod_dir), "--at", "16", "cat", "/image/topics/byName/foo/0"], capsys)
    assert code == 0 and "leader=2, leaderRecoveryState=RECOVERED, leaderEpoch=1, partitionEpoch=2" in out
    code, out, err = run(["shell", "--at", "15", str(jbod_dir), "cat", "/image/provenance"], capsys)
    assert (code, out) == (0, "offset 14, epoch 1, time 2023-11-14T22:13:25Z[UTC]\n")
    assert err == "offset 15 is inside batch 15..16; the state shown is the one published at 14\n"


def test_a_point_that_was_never_published_is_an_error(jbod_dir, capsys) -> None:
    code, out, err = run(["shell", str(jbod_dir), "--at", "99", "-c", "ls"], capsys)
    assert (code, out) == (1, "") and err == ("metalog: error: --at: offset 99 is past the end of the log (last offset "
                                              "24)\n")


def _metalog(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "metalog.cli.main", *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_commands_from_stdin(jbod_dir) -> None:
    done = _metalog("shell", str(jbod_dir), stdin="cd /image/topics/byName\nls; cat foo/id\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "foo\nUXyU9i5ARn6W00ON2taeWA\n", "")


class _Terminal:
    """The shell on the pseudo-terminal ``fd`` (process ``pid``): what it showed, and keys typed when it waits."""

    def __init__(self, pid: int, fd: int) -> None:
        import termios

        self.pid, self.fd, self.icanon = pid, fd, termios.ICANON
        self.transcript: list[str] = []  # what the terminal showed, for the message of a failed step
        self.selects = select_calls()

    def read_until(self, marker: str, timeout: float = WAIT) -> str:
        seen, end = "", time.monotonic() + timeout
        while marker not in seen and time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(self.fd, 4096).decode(errors="replace")
                except OSError:
                    break
        self.transcript.append(seen)
        return seen

    def type_in(self, keys: bytes) -> None:
        """Keys typed once readline waits for the next one: the terminal reads key by key (readline's mode) and the
        shell is blocked in its select() on the terminal, so that every key, Ctrl-C's SIGINT too, lands there."""
        wait_for(self._waiting_for_a_key, "the shell to wait for a key", self._gone)
        os.write(self.fd, keys)

    def _waiting_for_a_key(self) -> bool:
        import termios

        now = blocked(self.pid)
        return not termios.tcgetattr(self.fd)[3] & self.icanon and now is not None and now.syscall in self.selects

    def _gone(self) -> str | None:
        """Why the shell is no longer there to type to, if it is not (it stays unreaped: ``_wait_or_kill``)."""
        ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return None if ended is None else f"the shell ended (status {ended.si_status}): {self.shown()!r}"

    def shown(self) -> str:
        return "".join(self.transcript)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_interactive_on_a_terminal(jbod_dir: Path) -> None:
    """A prompt; tab completes a path; up-arrow brings the last line back; Ctrl-C abandons a line; Ctrl-D ends
    the shell with exit status 0 (Kafka's InteractiveShell.runMainLoop). Each key is typed when the shell waits for
    it, and each step waits for what the shell prints: nothing is decided by the time a step takes."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: the shell on the terminal, Ctrl-C its SIGINT whatever the worker inherited
        interruptible()
        os.execve(sys.executable, [sys.executable, "-m", "metalog.cli.main", "shell", str(jbod_dir)],
                  {**os.environ, "PYTHONFAULTHANDLER": "1"})
    term = _Terminal(pid, fd)
    try:
        banner = term.read_until(">> ")
        assert "offset 24 at 2023-11-14T22:13:28.000Z" in banner, banner
        term.type_in(b"cd /image/topics/byN\t")
        assert "cd /image/topics/byName/" in term.read_until("byName/")
        term.type_in(b"\n")
        term.read_until(">> ")
        term.type_in(b"ls\n")
        assert "foo" in term.read_until(">> ")
        term.type_in(b"\x1b[A\n")  # the line before: ls
        assert "foo" in term.read_until(">> ")
        term.type_in(b"partial line")
        term.read_until("line")
        # Ctrl-C while readline waits in select(): the SIGINT interrupts it, and the line is abandoned with ^C
        # (CPython's readline loop checks signals only when its select() is interrupted: a SIGINT that came while it
        # was handling a key would wait for the next key, Modules/readline.c readline_until_enter_or_signal)
        term.type_in(b"\x03")
        abandoned = term.read_until("^C")
        abandoned += term.read_until(">> ") if ">> " not in abandoned.partition("^C")[2] else ""
        assert "^C" in abandoned and "partial" not in abandoned.partition("^C")[2], abandoned
        term.type_in(b"\x04")  # Ctrl-D at an empty line (the exit status, below, is what the test waits for)
    except AssertionError as failed:
        if term._gone() is None:  # the shell is stuck: faulthandler prints where, on SIGABRT
            os.kill(pid, signal.SIGABRT)
            term.read_until("\x00", timeout=5)
        raise AssertionError(f"{failed}\nthe terminal showed:\n{term.shown()}") from None
    finally:
        status = _wait_or_kill(pid, timeout=WAIT)
        os.close(fd)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _wait_or_kill(pid: int, timeout: float) -> int:
    """The child's exit status; one still running after ``timeout`` seconds (a step above failed) is killed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]
