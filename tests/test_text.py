"""``metalog.text``: any text from a log or a file name, shown so that it cannot act on a terminal, and read back
exactly (the escape is reversible, so two names never print alike)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from metalog.text import escape, path_text

C0 = [chr(c) for c in range(0x20)]
C1 = [chr(c) for c in range(0x80, 0xA0)]
BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f"]
NOT_UTF8 = [chr(0xDC00 + b) for b in range(0x80, 0x100)]  # a file name's bytes, as os.fsdecode keeps them
HOSTILE = C0 + C1 + BIDI + NOT_UTF8 + ["\x7f", "\\", "\u2028", "\u2029", "\u00a0", "\ufeff", "\U000e0001"]
# any text: every character metalog may meet, with the hostile ones often
texts = st.text(st.one_of(st.sampled_from(HOSTILE), st.characters(), st.sampled_from("ax1 \\nu")))


def unescape(shown: str) -> str:
    """The inverse of ``escape``, written from its documented forms (not from its code)."""
    short = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}

    def one(m: re.Match[str]) -> str:
        if m[1] in short:
            return short[m[1]]
        n = int(m[2] or m[3] or m[4], 16)
        if m[2] is not None and n >= 0x80:  # \xNN from 80 on: a byte that is not UTF-8
            return chr(0xDC00 + n)
        return chr(n)

    return re.sub(r"\\(?:([\\nrt])|x([0-9a-f]{2})|u([0-9a-f]{4})|U([0-9a-f]{8}))", one, shown)


@given(texts)
def test_escaped_text_holds_no_character_that_does_not_print(text: str) -> None:
    # no C0 or C1 control, DEL, bidi override, line separator, surrogate...: nothing a terminal acts on, no newline
    assert escape(text).isprintable()


@given(texts)
def test_the_escape_is_reversible_so_no_two_texts_print_alike(text: str) -> None:
    assert unescape(escape(text)) == text


@given(st.text(st.characters(blacklist_characters="\\", blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl",
                                                                                 "Zp", "Zs")) | st.just(" ")))
def test_printable_text_is_shown_as_it_is(text: str) -> None:
    assert escape(text) == text


def test_each_form() -> None:
    assert escape("a\x1b]0;title\x07b") == "a\\x1b]0;title\\x07b"  # C0 controls: \xNN
    assert escape("row\nfake\rover\ttab") == "row\\nfake\\rover\\ttab"
    assert escape("del\x7f") == "del\\x7f"
    assert escape("c1\x85\x9b") == "c1\\u0085\\u009b"  # C1 controls: code points, \uNNNN
    assert escape("abc\u202edef") == "abc\\u202edef"  # a bidi override
    assert escape("tag\U000e0001") == "tag\\U000e0001"
    assert escape("back\\slash") == "back\\\\slash"
    assert escape("x1b\\x1b\x1b") == "x1b\\\\x1b\\x1b"  # the text "\x1b" and ESC print differently
    assert escape("caf\u00e9 \u65e5\u672c") == "caf\u00e9 \u65e5\u672c"  # printable unicode is shown as it is


def test_a_file_name_byte_that_is_not_utf8_is_shown_as_python_shows_a_byte() -> None:
    name = b"bad\xff\xfe\x85".decode("utf-8", "surrogateescape")
    assert path_text(name) == "bad\\xff\\xfe\\x85"
    assert escape("\x85") == "\\u0085"  # the code point U+0085 is not the byte 0x85
