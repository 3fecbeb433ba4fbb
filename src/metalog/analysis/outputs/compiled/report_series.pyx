# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twins of two of ``metalog.analysis.outputs.report.series``' functions: hand-written.

- ``int_list_text``: a line's int64s as the page's JSON array (or their differences), written into one buffer in
  C where the pure twin makes an int object and a string per value;
- ``m4_kept``: the indices ``decimated`` keeps of a line, its loop in C with 128-bit arithmetic where the pure
  twin's ints are unbounded;
- ``change_ints`` (``report.reading``'s): a column's change points and their times, the two int64 buffers read
  once in C where the pure twin makes a boolean array, concatenates it and filters both columns in Arrow.

The same answers: tests hold each equal to its pure twin for any int64s.
"""

from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from cpython.array cimport array, clone, resize

cdef extern from *:
    """
    #ifndef METALOG_CYTHON_VERSION
    #define METALOG_CYTHON_VERSION "unknown"
    #endif
    """
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()  # (metalog --version names it: core.twin_status)

DEF DIGITS = 20  # an int64's decimal digits, at most (a uint64's too)

cdef extern from *:
    ctypedef long long int128 "__int128"  # (gcc's and clang's 128-bit integer: the arithmetic in C is 128-bit)


cdef inline char *_unsigned(char *out, uint64_t n) noexcept:
    """``n`` in decimal at ``out``; the end."""
    cdef char room[DIGITS]
    cdef char *start = room + DIGITS
    while True:
        start -= 1
        start[0] = <char>(48 + n % 10)
        n //= 10
        if n == 0:
            break
    memcpy(out, start, room + DIGITS - start)
    return out + (room + DIGITS - start)


cdef inline char *_difference(char *out, int64_t a, int64_t b) noexcept:
    """``a - b`` in decimal at ``out``, exactly (its magnitude fits a uint64 for any two int64s); the end."""
    if a >= b:
        return _unsigned(out, <uint64_t>a - <uint64_t>b)
    out[0] = b'-'
    return _unsigned(out + 1, <uint64_t>b - <uint64_t>a)


def int_list_text(const int64_t[::1] values, start):
    """See the pure twin: ``[v0,v1,...]``; with ``start`` (an int64), the differences, the first from it."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef bint deltas = start is not None
    cdef int64_t before = start if deltas else 0  # (an int beyond int64: OverflowError)
    cdef char *text = <char *>malloc(n * (DIGITS + 2) + 2)
    cdef char *at = text
    if text is NULL:
        raise MemoryError()
    try:
        at[0] = b'['
        at += 1
        for i in range(n):
            if i:
                at[0] = b','
                at += 1
            if deltas:
                at = _difference(at, values[i], before)
                before = values[i]
            else:
                at = _difference(at, values[i], 0)
        at[0] = b']'
        at += 1
        return PyUnicode_DecodeASCII(text, at - text, NULL)
    finally:
        free(text)


cdef inline int128 _floor_div(int128 a, int128 b) noexcept:
    """Python's ``a // b`` (rounding down) for b > 0."""
    cdef int128 q = a / b
    if a % b != 0 and a < 0:
        q -= 1
    return q


cdef inline int128 _bucket(int64_t t, int64_t t0, int128 span, int64_t buckets) noexcept:
    cdef int128 found = _floor_div((<int128>t - t0) * buckets, span)
    return found if found < buckets - 1 else buckets - 1


def m4_kept(const int64_t[::1] times, const int64_t[::1] values, int64_t t0, int64_t t1, int64_t buckets):
    """See the pure twin: the indices of the points ``decimated`` keeps, in order, as an ``array('q')``."""
    cdef Py_ssize_t n = times.shape[0], i = 0, j, lo, hi, k
    if values.shape[0] != n:
        raise ValueError(f"{n} times and {values.shape[0]} values")
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, not {buckets}")
    if buckets > (<int64_t>1 << 62):  # ((t - t0) * buckets in 128 bits: the pure twin's unbounded ints)
        raise OverflowError(f"{buckets} buckets")
    cdef int128 span = <int128>t1 - t0
    if span < 1:
        span = 1
    cdef array kept = clone(array("q"), n, False)
    cdef long long *out = kept.data.as_longlongs
    cdef int128 bucket
    cdef Py_ssize_t four[4]
    cdef Py_ssize_t count = 0, a, b, c
    while i < n:
        bucket = _bucket(times[i], t0, span, buckets)
        j = lo = hi = i
        while j + 1 < n and _bucket(times[j + 1], t0, span, buckets) == bucket:
            j += 1
            if values[j] < values[lo]:
                lo = j
            elif values[j] > values[hi]:
                hi = j
        four[0] = i
        four[1] = lo
        four[2] = hi
        four[3] = j
        for a in range(1, 4):  # sorted (insertion), then each once
            c = four[a]
            b = a - 1
            while b >= 0 and four[b] > c:
                four[b + 1] = four[b]
                b -= 1
            four[b + 1] = c
        for k in range(4):
            if k == 0 or four[k] != four[k - 1]:
                out[count] = four[k]
                count += 1
        i = j + 1
    resize(kept, count)
    return kept


cdef array INT64S = array("q")


cdef const int64_t[:] _int64s(column):
    """An int64 Arrow array without nulls (not empty) as a view of its buffer: no copy."""
    return memoryview(column.buffers()[1]).cast("q")[column.offset:column.offset + len(column)]


def change_ints(times, values):
    """See the pure twin: (the change points' times, their values), as ``array('q')``s."""
    cdef Py_ssize_t n = len(values), i, count = 0
    cdef const int64_t[:] t
    cdef const int64_t[:] v
    cdef array at, found
    cdef int64_t *at_p
    cdef int64_t *found_p
    if len(times) != n:
        raise ValueError(f"{len(times)} times for {n} values")
    if n == 0:
        return clone(INT64S, 0, False), clone(INT64S, 0, False)
    if times.null_count or values.null_count:
        raise ValueError("a time or a value missing")
    t, v = _int64s(times), _int64s(values)
    at, found = clone(INT64S, n, False), clone(INT64S, n, False)
    at_p, found_p = <int64_t *>at.data.as_voidptr, <int64_t *>found.data.as_voidptr
    at_p[0], found_p[0] = t[0], v[0]
    count = 1
    for i in range(1, n):
        if v[i] != v[i - 1]:
            at_p[count] = t[i]
            found_p[count] = v[i]
            count += 1
    resize(at, count)
    resize(found, count)
    return at, found
