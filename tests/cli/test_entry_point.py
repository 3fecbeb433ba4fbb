"""``metalog``'s entry point, ``metalog.cli.main.run``: the process exits with the status ``main`` returned, even when
a Ctrl-C comes while the interpreter tears down (after the command's work, before the process ends)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.interrupting import interruptible
from tests.waiting import DEADLINE

# A Ctrl-C while the interpreter tears down, sent by the process to itself at a point of the teardown: from an atexit
# callback (Python code, while SIGINT still has Python's handler), or as __main__'s globals are cleared (after
# Python gave SIGINT back its default action, which kills the process)
CTRL_C_AT_EXIT = """
import atexit, os, signal, sys

class CtrlC:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)

if sys.argv[1] == "atexit":
    atexit.register(os.kill, os.getpid(), signal.SIGINT)
else:
    ctrl_c = CtrlC()
from metalog.cli.main import run
run(sys.argv[2:])
"""


@pytest.mark.parametrize("when", ["atexit", "modules cleared"])
def test_a_ctrl_c_while_the_interpreter_tears_down_leaves_the_status(when: str) -> None:
    """An analysis that had written and listed its outputs used to end killed by SIGINT (-2), with no word, when a
    Ctrl-C landed in the few tenths of a second the interpreter takes to tear down pyarrow and matplotlib."""
    done = subprocess.run([sys.executable, "-c", CTRL_C_AT_EXIT, when, "codec", "list"], capture_output=True,
                          text=True, timeout=DEADLINE, preexec_fn=interruptible)
    assert (done.returncode, done.stderr) == (0, "")
    assert "KRaftVersionRecord" in done.stdout  # the command ran


def test_the_status_is_mains() -> None:
    done = subprocess.run([sys.executable, "-c", CTRL_C_AT_EXIT, "modules cleared", "log", "dump", "/nonexistent"],
                          capture_output=True, text=True, timeout=DEADLINE, preexec_fn=interruptible)
    assert done.returncode == 1 and done.stderr.startswith("metalog: error: ")


# what the cyclic garbage collector may still walk as the interpreter tears down, seen from an atexit callback (the
# callbacks run after ``run`` raised SystemExit, before the modules are cleared)
FROZEN_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: print(f"frozen {gc.get_freeze_count()} of {gc.get_freeze_count() + len(gc.get_objects())}",
                              file=sys.stderr))
from metalog.cli.main import run
run(sys.argv[1:])
"""


@pytest.mark.parametrize("argv", [["codec", "list"], ["log", "dump", "/nonexistent"]])
def test_the_teardown_leaves_the_collector_nothing_to_walk(argv: list[str]) -> None:
    """The interpreter's teardown ran the cycle collector four times over every object the command left (the
    modules' among them: pyarrow's, the report's), to free what the process's end frees anyway; a command's objects
    are frozen out of its reach once ``main`` has returned, whatever it returned."""
    done = subprocess.run([sys.executable, "-c", FROZEN_AT_EXIT, *argv], capture_output=True, text=True,
                          timeout=DEADLINE)
    frozen, _, alive = done.stderr.splitlines()[-1].removeprefix("frozen ").partition(" of ")
    assert int(frozen) > 0 and int(alive) - int(frozen) < 100, done.stderr
