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

WAIT = 60.0  # seconds a step may take: on a loaded machine a niced interpreter can take half a minute to start


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


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_interactive_on_a_terminal(jbod_dir: Path) -> None:
    """A prompt; tab completes a path; up-arrow brings the last line back; Ctrl-C abandons a line; Ctrl-D ends
    the shell with exit status 0 (Kafka's InteractiveShell.runMainLoop)."""
    import pty
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: the shell on the terminal
        os.execve(sys.executable, [sys.executable, "-m", "metalog.cli.main", "shell", str(jbod_dir)],
                  {**os.environ, "PYTHONFAULTHANDLER": "1"})
    transcript: list[str] = []  # what the terminal showed, for the message of a failed step

    def read_until(marker: str, timeout: float = WAIT) -> str:
        seen, end = "", time.monotonic() + timeout
        while marker not in seen and time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(fd, 4096).decode(errors="replace")
                except OSError:
                    break
        transcript.append(seen)
        return seen

    def type_in(keys: bytes) -> None:
        """Keys typed once readline reads the terminal key by key (it has printed its prompt a moment before)."""
        end = time.monotonic() + WAIT
        while termios.tcgetattr(fd)[3] & termios.ICANON and time.monotonic() < end:
            time.sleep(0.01)
        os.write(fd, keys)

    try:
        banner = read_until(">> ")
        assert "offset 24 at 2023-11-14T22:13:28.000Z" in banner, banner
        type_in(b"cd /image/topics/byN\t")
        assert "cd /image/topics/byName/" in read_until("byName/")
        type_in(b"\n")
        read_until(">> ")
        type_in(b"ls\n")
        assert "foo" in read_until(">> ")
        type_in(b"\x1b[A\n")  # the line before: ls
        assert "foo" in read_until(">> ")
        type_in(b"partial line")
        read_until("line")
        # Ctrl-C, then Enter, always: CPython's readline loop checks signals only when its select() is interrupted,
        # so a SIGINT that comes between a key's echo and the next select() waits for the next key
        # (Modules/readline.c, readline_until_enter_or_signal); the line is abandoned then, with its ^C. Where
        # the SIGINT came in time, Enter is an empty line at the next prompt. Either way the shell prints ^C and a
        # prompt, and Ctrl-D, typed after Enter, ends it at an empty line
        type_in(b"\x03")
        os.write(fd, b"\n")
        abandoned = read_until("^C")
        abandoned += read_until(">> ") if ">> " not in abandoned.split("^C", 1)[1] else ""
        assert "^C" in abandoned and "partial" not in abandoned.split("^C", 1)[1], abandoned
        os.write(fd, b"\x04")  # (the exit status, below, is what the test waits for)
    except AssertionError:
        if os.waitpid(pid, os.WNOHANG)[0] == 0:  # the shell is stuck: faulthandler prints where, on SIGABRT
            os.kill(pid, signal.SIGABRT)
            read_until("\x00", timeout=5)
        raise AssertionError("the terminal showed:\n" + "".join(transcript)) from None
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
