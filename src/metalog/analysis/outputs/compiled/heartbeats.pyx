# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twins of ``metalog.analysis.outputs.sampling.select`` and ``series_samples``: hand-written.

The same samples, picked by the same walk (the pure function is the specification: read it first), over int64
buffers instead of Python ints. A series' previous sample plus a heartbeat that passes int64's top saturates there:
no batch time is later, as no Python int would be (the open end, an infinity in the pure twin, stays later than
any). ``series_samples`` reads a series' values at the rows decided and finds its changes over int64 buffers, then
picks by ``select``. ``tests/analysis/outputs/test_sampling.py`` holds the twins equal for any int64s.
"""

from cpython.array cimport array, clone, resize
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef extern from *:
    """
    #ifndef METALOG_CYTHON_VERSION
    #define METALOG_CYTHON_VERSION "unknown"
    #endif
    """
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()

cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF
cdef int64_t HEARTBEAT_MS = 60_000  # sampling.HEARTBEAT_MS: a build that disagrees does not run (HEARTBEAT)
HEARTBEAT = HEARTBEAT_MS
cdef array INT64 = array("q")


cdef inline bint later(const int64_t[:] nexts, Py_ssize_t j, Py_ssize_t m, bint open_end, int64_t bound):
    """The batch time after the ``j``-th is later than ``bound`` (the open end is later than any)."""
    return (open_end and j == m - 1) or nexts[j] > bound


cdef inline Py_ssize_t first_later(const int64_t[:] nexts, Py_ssize_t lo, Py_ssize_t m, bint open_end,
                                   int64_t bound):
    """``bisect_right(nexts, bound, lo)``: the first index from ``lo`` whose next batch time is later than
    ``bound`` (``nexts`` never decrease), or ``m``."""
    cdef Py_ssize_t hi = m, mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if later(nexts, mid, m, open_end, bound):
            hi = mid
        else:
            lo = mid + 1
    return lo


def select(const int64_t[:] times, const int64_t[:] nexts, bint open_end, const int64_t[:] changes, last,
           int64_t heartbeat):
    """``sampling.select``: (the indices of the samples as an ``array('q')``, the last sample's time or None)."""
    cdef Py_ssize_t m = times.shape[0], n = changes.shape[0], k, start = 0, beat, change, count = 0
    cdef bint has_last = last is not None
    cdef int64_t at = last if has_last else 0, bound
    cdef int64_t *picked
    cdef array out
    if nexts.shape[0] != m:
        raise ValueError(f"{m} batch times and {nexts.shape[0]} next ones")
    if heartbeat < 0:
        raise ValueError(f"a heartbeat of {heartbeat} ms")
    picked = <int64_t *>malloc((m + 1) * sizeof(int64_t))
    if picked is NULL:
        raise MemoryError()
    try:
        for k in range(n + 1):
            change = changes[k] if k < n else m
            if change < 0 or change > m:
                raise ValueError(f"a change at {change}, not among {m} batch times")
            while True:
                if not has_last:  # the series' first batch time
                    beat = start
                else:
                    bound = INT64_MAX if at > INT64_MAX - heartbeat else at + heartbeat
                    if change > start and later(nexts, change - 1, m, open_end, bound):
                        beat = first_later(nexts, start, m, open_end, bound)
                    else:
                        break
                if beat >= change:
                    break
                picked[count] = beat
                count += 1
                has_last, at, start = True, times[beat], beat + 1
            if change >= m:
                break
            picked[count] = change
            count += 1
            has_last, at, start = True, times[change], change + 1
        out = clone(INT64, count, False)
        memcpy(out.data.as_voidptr, picked, count * sizeof(int64_t))
    finally:
        free(picked)
    return out, (at if has_last else None)


def series_samples(decided, const int64_t[:] column, head, before, last, bint every_batch):
    """``sampling.series_samples``: (the samples' times and values as ``array('q')``s, the series' value at the
    last batch time decided, its last sample's time or None)."""
    cdef const int64_t[:] times = decided.times, rows = decided.rows
    cdef Py_ssize_t m = rows.shape[0], n = column.shape[0], i, count = 0, shift = 0 if head is None else 1
    cdef int64_t first = head if head is not None else 0, row
    cdef bint has_before = before is not None
    cdef int64_t previous = before if has_before else 0
    cdef array at, changes, picked, out_times, out_values
    cdef int64_t *values
    cdef int64_t *found
    cdef const int64_t[:] chosen
    if m == 0 or times.shape[0] != m:
        raise ValueError(f"{m} rows for {times.shape[0]} batch times decided (at least one)")
    at = clone(INT64, m, False)
    changes = clone(INT64, m, False)
    values, found = <int64_t *>at.data.as_voidptr, <int64_t *>changes.data.as_voidptr
    for i in range(m):
        row = rows[i]
        if row < shift:
            if row < 0:
                raise IndexError(f"row {row}")
            values[i] = first
        else:
            if row - shift >= n:
                raise IndexError(f"row {row} of {n + shift}")
            values[i] = column[row - shift]
        if every_batch or (values[i] != (values[i - 1] if i else previous)) or (i == 0 and not has_before):
            found[count] = i
            count += 1
    resize(changes, count)
    picked, last = select(times, decided.nexts, decided.open_end, changes, last, HEARTBEAT_MS)
    chosen = picked
    out_times, out_values = clone(INT64, chosen.shape[0], False), clone(INT64, chosen.shape[0], False)
    for i in range(chosen.shape[0]):
        (<int64_t *>out_times.data.as_voidptr)[i] = times[chosen[i]]
        (<int64_t *>out_values.data.as_voidptr)[i] = values[chosen[i]]
    return out_times, out_values, values[m - 1], last
