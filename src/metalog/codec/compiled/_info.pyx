# cython: language_level=3
"""Facts of the build of the compiled readers (hand-written: the one compiled module not generated)."""

cdef extern from "_reader.h":
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()


from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from cpython.object cimport PyObject

from metalog.codec.compiled._reader cimport entry_fn, read_entry, read_entry_into


def run_entry(capsule, bytes data, Py_ssize_t pos):
    """The reader behind one of a generated module's ``ENTRIES`` capsules, run through its C entry point
    (``_reader.pxd``'s ``read_entry``, as the compiled replay runs it) over ``data`` from ``pos``: ``(obj, end)``, or
    None where the reader refuses the input (what the tests hold against the reader's Python entry point)."""
    cdef Py_ssize_t stop = 0
    if not 0 <= pos <= PyBytes_GET_SIZE(data):
        raise ValueError(f"position {pos} outside the {PyBytes_GET_SIZE(data)} bytes")
    obj = read_entry(entry_fn(capsule), <const unsigned char *>PyBytes_AS_STRING(data), pos, PyBytes_GET_SIZE(data),
                     &stop)
    return None if obj is None else (obj, stop)


def run_entry_into(capsule, make, bytes data, Py_ssize_t pos):
    """``run_entry`` as the compiled replay runs it for its own rules (``_reader.pxd``'s ``read_entry_into``): into
    the object ``make()`` returns, which only this function then holds. ``(obj, end, obj is that object)``, or None
    where the reader refuses the input."""
    cdef Py_ssize_t stop = 0
    if not 0 <= pos <= PyBytes_GET_SIZE(data):
        raise ValueError(f"position {pos} outside the {PyBytes_GET_SIZE(data)} bytes")
    into = make()
    obj = read_entry_into(entry_fn(capsule), <PyObject *>into, <const unsigned char *>PyBytes_AS_STRING(data), pos,
                          PyBytes_GET_SIZE(data), &stop)
    return None if obj is None else (obj, stop, obj is into)
