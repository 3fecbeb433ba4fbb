# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.analysis.outputs.openmetrics.sample_lines``: hand-written.

A series' sample lines of controller_metrics.om (``prefix``, the value, a space, the time in seconds with its
milliseconds, a newline), written into one buffer in C where the pure twin makes two strings per sample. The same
text: tests hold the two equal (any int64 value and time, any prefix).
"""

from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef extern from *:
    """
    #ifndef METALOG_CYTHON_VERSION
    #define METALOG_CYTHON_VERSION "unknown"
    #endif
    """
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()  # (metalog --version names it: core.twin_status)

DEF DIGITS = 20  # an int64's decimal digits, at most


cdef inline char *_digits(char *at, uint64_t n) noexcept:
    """``n`` in decimal, written ending just before ``at``; the start of its digits."""
    while True:
        at -= 1
        at[0] = <char>(48 + n % 10)
        n //= 10
        if n == 0:
            return at


cdef inline char *_int(char *out, int64_t value) noexcept:
    """``value`` in decimal at ``out`` (a minus sign first where negative); the end."""
    cdef char room[DIGITS]
    cdef uint64_t n = <uint64_t>value
    cdef char *start
    if value < 0:
        out[0] = b'-'
        out += 1
        n = <uint64_t>0 - n  # (int64's least value too)
    start = _digits(room + DIGITS, n)
    memcpy(out, start, room + DIGITS - start)
    return out + (room + DIGITS - start)


cdef inline char *_seconds(char *out, int64_t ms) noexcept:
    """Epoch milliseconds as seconds with three decimals (``openmetrics.seconds``); the end."""
    cdef uint64_t n = <uint64_t>ms
    cdef uint64_t frac
    cdef char room[DIGITS]
    cdef char *start
    if ms < 0:
        out[0] = b'-'
        out += 1
        n = <uint64_t>0 - n
    frac = n % 1000
    start = _digits(room + DIGITS, n // 1000)
    memcpy(out, start, room + DIGITS - start)
    out += room + DIGITS - start
    out[0] = b'.'
    out[1] = <char>(48 + frac // 100)
    out[2] = <char>(48 + frac // 10 % 10)
    out[3] = <char>(48 + frac % 10)
    return out + 4


def sample_lines(str prefix, values, times):
    """See the pure twin: ``prefix``, then for each sample its value, a space, its time and a newline."""
    cdef Py_ssize_t size
    cdef const char *head = PyUnicode_AsUTF8AndSize(prefix, &size)
    cdef Py_ssize_t n = len(values), i
    if len(times) != n:
        raise ValueError(f"{n} values and {len(times)} times")
    cdef list vs = list(values), ts = list(times)
    cdef int64_t value, ms
    # per line at most: the prefix, a signed value, a space, signed seconds, a point and three digits, a newline
    cdef char *text = <char *>malloc(n * (size + 2 * (DIGITS + 1) + 6) + 1)
    cdef char *at = text
    if text is NULL:
        raise MemoryError()
    try:
        for i in range(n):
            value, ms = vs[i], ts[i]  # (an int out of int64's range: OverflowError)
            memcpy(at, head, size)
            at = _int(at + size, value)
            at[0] = b' '
            at = _seconds(at + 1, ms)
            at[0] = b'\n'
            at += 1
        return PyUnicode_DecodeUTF8(text, at - text, NULL)
    finally:
        free(text)
