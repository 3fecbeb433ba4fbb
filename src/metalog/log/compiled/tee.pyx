# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twins of ``metalog.log.tee``'s ``ValueTee`` and ``EndTee``: hand-written.

Each carries the C entry the log's compiled scan calls (``c_value_sink``, ``c_batch_end``: the protocols of
``metalog.codec.compiled.sinks``) and hands on in C to a reader that carries one too; to any other reader it makes
the value's bytes once and calls it. A batch the scan hands to its pure loop comes as the Python call the pure twin
takes. First ``first``, then ``second``, as the pure twins (``tests/log/test_tee.py`` holds them equal).
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New
from libc.stdint cimport int64_t

from metalog.codec.compiled.sinks cimport ml_value_sink, ml_batch_end

cdef extern from "_log.h":
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()


cdef void *_entry(obj, str attribute, const char *name) except? NULL:
    """The C entry ``obj`` carries (a capsule named ``name`` in its ``attribute``), or NULL."""
    cap = getattr(obj, attribute, None)
    if cap is not None and PyCapsule_IsValid(cap, name):
        return PyCapsule_GetPointer(cap, name)
    return NULL


cdef class ValueTee:
    """See the pure twin."""

    cdef readonly object first, second
    cdef ml_value_sink *c_first
    cdef ml_value_sink *c_second
    cdef public object c_value_sink

    def __init__(self, first, second):
        self.first, self.second = first, second
        self.c_first = <ml_value_sink *>_entry(first, "c_value_sink", b"metalog.value_sink.v1")
        self.c_second = <ml_value_sink *>_entry(second, "c_value_sink", b"metalog.value_sink.v1")
        self.c_value_sink = PyCapsule_New(&VALUES, b"metalog.value_sink.v1", NULL)

    def __call__(self, value, offset):
        self.first(value, offset)
        self.second(value, offset)


cdef class EndTee:
    """See the pure twin."""

    cdef readonly object first, second
    cdef ml_batch_end *c_first
    cdef ml_batch_end *c_second
    cdef public object c_batch_end

    def __init__(self, first, second):
        self.first, self.second = first, second
        self.c_first = <ml_batch_end *>_entry(first, "c_batch_end", b"metalog.batch_end.v1")
        self.c_second = <ml_batch_end *>_entry(second, "c_batch_end", b"metalog.batch_end.v1")
        self.c_batch_end = PyCapsule_New(&ENDS, b"metalog.batch_end.v1", NULL)

    def __call__(self, base, last, timestamp, control, size):
        self.first(base, last, timestamp, control, size)
        self.second(base, last, timestamp, control, size)


cdef int _feed(object sink, const unsigned char *p, Py_ssize_t n, int64_t offset) except -1:
    cdef ValueTee tee = <ValueTee>sink
    cdef object value = None
    if tee.c_first is not NULL:
        tee.c_first.feed(tee.first, p, n, offset)
    else:
        value = PyBytes_FromStringAndSize(<const char *>p, n)
        tee.first(value, offset)
    if tee.c_second is not NULL:
        tee.c_second.feed(tee.second, p, n, offset)
    else:
        if value is None:
            value = PyBytes_FromStringAndSize(<const char *>p, n)
        tee.second(value, offset)
    return 0


cdef int _end(object hook, int64_t base, int64_t last, int64_t timestamp, int control, Py_ssize_t size) except -1:
    cdef EndTee tee = <EndTee>hook
    if tee.c_first is not NULL:
        tee.c_first.end(tee.first, base, last, timestamp, control, size)
    else:
        tee.first(base, last, timestamp, control != 0, size)
    if tee.c_second is not NULL:
        tee.c_second.end(tee.second, base, last, timestamp, control, size)
    else:
        tee.second(base, last, timestamp, control != 0, size)
    return 0


cdef ml_value_sink VALUES
VALUES.feed = _feed
cdef ml_batch_end ENDS
ENDS.end = _end
