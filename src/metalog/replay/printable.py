"""Names from a log, made safe to print: the name the quorum, storage and ``why`` verbs print every name through
(topic names, listener names and hosts, config values, ids read from files). The rule is ``metalog.text.escape``,
every table's, the shell's and history's: a character that does not print as a backslash escape, a backslash as
two. JSON output needs none of this (``json.dumps`` escapes control characters itself).
"""

from __future__ import annotations

from metalog.text import escape


def name(text: object) -> str:
    """``text`` as a string a terminal shows literally (``metalog.text.escape`` of its ``str``)."""
    return escape(str(text))
