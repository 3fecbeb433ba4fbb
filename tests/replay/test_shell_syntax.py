"""How ``metalog shell`` splits a line: the same words as ``shlex.split`` (which it used), in time linear in the
line's length (shlex's is quadratic in a word's: 12 s for a 1 MB line, 45 s for 2 MB)."""

from __future__ import annotations

import io
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from metalog.errors import MetalogError
from metalog.replay import shell_syntax
from metalog.replay.history import MetadataHistory
from metalog.replay.shell import MetadataShell
from metalog.replay.shell_syntax import split_commands, split_words

# the characters the syntax gives a meaning to, often, and any other
lines = st.text(st.one_of(st.sampled_from(" \t\r\n'\"\\;ab"), st.characters()), max_size=40)


def shlex_words(line: str) -> list[str] | str:
    try:
        return shlex.split(line, comments=False)
    except ValueError as e:
        return str(e)


def our_words(line: str) -> list[str] | str:
    try:
        return split_words(line)
    except MetalogError as e:
        return str(e)


@given(lines)
@example("a 'b c' \"d \\\" e\" f\\ g")
@example('"abc\\')
@example('"abc\\\\')
@example("x''y \"\" ''")
def test_words_are_shlex_words(line: str) -> None:
    # the same words for every line shlex reads, and shlex's error (No closing quotation, No escaped character)
    # for every line it refuses
    assert our_words(line) == shlex_words(line)


@given(st.lists(lines, max_size=4))
def test_commands_split_at_semicolons_outside_quotes(commands: list[str]) -> None:
    # commands quoted whole (semicolons and all) and joined with "; " come back one word each
    quoted = [shlex.quote(c) for c in commands if c.strip()]
    assert [split_words(c) for c in split_commands("; ".join(quoted))] == [[c] for c in commands if c.strip()]


def test_semicolons_in_quotes_and_escaped_stay() -> None:
    assert split_commands("cat 'a;b'; ls \"c;d\"; cat e\\;f ;; pwd") == ["cat 'a;b'", 'ls "c;d"', "cat e\\;f", "pwd"]
    assert split_commands("cat 'open;") == ["cat 'open;"]  # an unclosed quote runs to the end (its words say so)


def python_lines_run(function: Callable[[str], Any], line: str, modules: tuple[str, ...]) -> int:
    """How many lines of Python ``modules`` execute while ``function(line)`` runs: the work done a step at a time
    (a regular expression's scan is one step, however long)."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename in modules:
            if event == "line":
                count += 1
            return trace
        return None

    sys.settrace(trace)
    try:
        function(line)
    except MetalogError:
        pass
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize("shape", ["cat {}", "cat '{}'", 'cat "{}"', "cat {}\\", "cat '{}", "{0};{0}"])
def test_python_steps_do_not_grow_with_a_words_length(shape: str) -> None:
    # linear by structure: the Python steps are per word and quote, not per character; the regular expression
    # takes a whole run of characters in one step, linear in its length
    ours = (shell_syntax.__file__,)
    short = python_lines_run(split_words, shape.format("x" * 10), ours)
    long = python_lines_run(split_words, shape.format("x" * 100_000), ours)
    assert long == short
    short = python_lines_run(split_commands, shape.format("x" * 10), ours)
    long = python_lines_run(split_commands, shape.format("x" * 100_000), ours)
    assert long == short


def test_the_shell_splits_a_long_line_as_split_words_does(jbod_dir: Path) -> None:
    # the shell itself: a long command line runs (one step per word in the splitting, as above) and fails as
    # one line (shlex took 12 s over 1 MB)
    with MetadataHistory(jbod_dir) as history:
        shell = MetadataShell(history, history.state_at())
        line = "cat /image/" + "x" * 200_000
        out, err = io.StringIO(), io.StringIO()
        steps = python_lines_run(lambda text: shell.run(text, out, err), line, (shell_syntax.__file__, shlex.__file__))
        assert not out.getvalue() and err.getvalue().startswith("cat: /image/xxx") and err.getvalue().count("\n") == 1
    assert steps == python_lines_run(split_words, "cat /image/x", (shell_syntax.__file__,))
