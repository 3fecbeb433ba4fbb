"""Text from a log, or from the file system, as a person's terminal shows it: it can never act on the terminal.

A topic name, a rack, a config key or value, a listener's host, an ACL's principal: each is whatever bytes a
client sent, and a directory name is whatever bytes the file system holds. Printed raw, ``ESC ] 0 ;`` retitles
the terminal, ``ESC [ 2 J`` clears it, ``\\r`` overwrites the line and ``\\n`` adds a row to a table that looks like
metalog's own; a bidi override (U+202E) shows the text after it reversed. ``escape`` is the one rule every
table, shell and history printer applies to such text, a value at a time, so that a value stays in its cell.

The escapes are the backslash forms of C, Python and JSON, which a person who reads logs knows: ``\\n``, ``\\r``
and ``\\t``; ``\\xNN`` for another ASCII control (C0 and DEL); ``\\uNNNN`` (``\\UNNNNNNNN`` above U+FFFF) for any
other character that does not print (Python's ``str.isprintable``: the C1 controls, format characters such as
bidi overrides and zero-width joiners, line and paragraph separators, spaces other than the ASCII one, surrogates,
private-use and unassigned code points); and ``\\\\`` for a backslash. Escaping the backslash makes the rule
reversible: a name that holds the four characters ``\\x1b`` prints as ``\\\\x1b`` and is never confused with a name
that holds ESC. A byte of a file name that is not UTF-8 (Python keeps it as the surrogate U+DC80..U+DCFF) prints
as ``\\xNN`` with NN 80 or more, as Python writes a byte, which no code point's escape can be.

JSON output stays JSON, and is already safe: ``json.dumps`` with ``ensure_ascii`` (its default, which every JSON
printer of metalog keeps) writes each character outside printable ASCII, DEL and the C0 controls included, as
``\\uNNNN``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import PurePath

_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BYTE_FIRST, _BYTE_LAST = 0xDC80, 0xDCFF  # surrogateescape: a byte 0x80..0xFF that is not UTF-8


def escape(text: str) -> str:
    """``text`` with every character that does not print, and the backslash, written as a backslash escape."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(map(_char, text))


def _char(c: str) -> str:
    short = _SHORT.get(c)
    if short is not None:
        return short
    if c.isprintable():
        return c
    n = ord(c)
    if _BYTE_FIRST <= n <= _BYTE_LAST:
        return f"\\x{n - 0xDC00:02x}"
    if n < 0x80:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def path_text(path: str | PurePath) -> str:
    """A file or directory name as ``escape`` shows it (a byte that is not UTF-8 as ``\\xNN``)."""
    return escape(str(path))  # (str, not os.fspath: codec and state, which do no I/O, may use this module)

