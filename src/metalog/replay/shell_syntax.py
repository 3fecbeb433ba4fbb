"""How ``metalog shell`` reads a line: commands split at ``;``, each command split into words.

The syntax is a POSIX shell's quoting, as Python's ``shlex.split`` reads it (which the shell used before): words
are separated by blanks (space, tab, CR, LF); ``'...'`` keeps everything inside as it is; ``"..."`` too, but
``\\"`` and ``\\\\`` in it stand for ``"`` and ``\\``; outside quotes ``\\`` takes the next character as it is.
An unclosed quote or a ``\\`` at the end is an error, with shlex's words. ``;`` outside quotes ends a command.

Linear in the line's length: one regular expression takes a whole run of plain characters, a quoted string or an
escape at a time (each of its branches begins with a different character, so nothing is tried twice), and words
are joined once. ``shlex`` adds a token a character at a time to a string attribute, which copies the token
each time: a 1 MB line took 12 s, 2 MB 45 s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from metalog.errors import MetalogError

_BLANKS = " \t\r\n"
_PIECE = re.compile(r"""
    (?P<blank>[ \t\r\n]+)
  | (?P<plain>[^ \t\r\n'"\\;]+)
  | '(?P<single>[^']*)'
  | "(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"
  | \\(?P<escaped>.)
  | (?P<semicolon>;)
  | (?P<unclosed>['"\\].*)
""", re.VERBOSE | re.DOTALL)
_DOUBLE_ESCAPE = re.compile(r'\\(["\\])')


def _pieces(line: str) -> Iterator[re.Match[str]]:
    """The line as consecutive pieces: every character in exactly one (the branches cover every character)."""
    pos, end = 0, len(line)
    while pos < end:
        m = _PIECE.match(line, pos)
        assert m is not None and m.end() > pos
        yield m
        pos = m.end()


def split_commands(text: str) -> list[str]:
    """``cmd; cmd``: the commands of a line, split at semicolons outside quotes, each as typed (stripped). An
    unclosed quote runs to the end of the line (splitting the command into words says so)."""
    out: list[str] = []
    start = 0
    for m in _pieces(text):
        if m.lastgroup == "semicolon":
            out.append(text[start:m.start()])
            start = m.end()
    out.append(text[start:])
    return [c.strip() for c in out if c.strip()]


def split_words(line: str) -> list[str]:
    """A command's words, as ``shlex.split(line)`` gives them (a ``;`` is an ordinary character here)."""
    words: list[str] = []
    word: list[str] = []
    in_word = False
    for m in _pieces(line):
        kind = m.lastgroup
        if kind == "blank":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            continue
        if kind == "unclosed":
            raise MetalogError(_unclosed(m.group()))
        in_word = True
        if kind == "double":
            word.append(_DOUBLE_ESCAPE.sub(r"\1", m["double"]))
        elif kind == "plain" or kind == "semicolon":
            word.append(m.group())
        else:  # single, escaped
            word.append(m[kind or ""])
    if in_word:
        words.append("".join(word))
    return words


def _unclosed(rest: str) -> str:
    """shlex's words for a line that ends inside a quote or an escape."""
    if rest[0] == "'":
        return "No closing quotation"
    if rest[0] == '"' and re.fullmatch(r'"[^"\\]*(?:\\.[^"\\]*)*\\', rest, re.DOTALL) is None:
        return "No closing quotation"
    return "No escaped character"
