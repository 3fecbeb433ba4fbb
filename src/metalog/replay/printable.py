"""Names from a log, made safe to print: the one function the quorum, storage and ``why`` verbs print every name
through (topic names, listener names and hosts, config values, ids read from files).

A name in a log is data someone else wrote: an escape sequence in a topic name would move the cursor or retitle
the terminal of whoever prints it. ``name`` shows every character that is not printable as a Python escape
(``\\x1b``, ``\\u202e``) and a backslash as two, so what is shown is unambiguous and inert. JSON output needs
none of this (``json.dumps`` escapes control characters itself).

A shared escaping function for every verb is being written elsewhere; when it lands, ``name`` becomes a call to
it, and nothing else here changes.
"""

from __future__ import annotations


def name(text: object) -> str:
    """``text`` as a string a terminal shows literally."""
    s = str(text)
    if s.isprintable() and "\\" not in s:
        return s
    return "".join(_char(c) for c in s)


def _char(c: str) -> str:
    if c == "\\":
        return "\\\\"
    if c.isprintable():
        return c
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
