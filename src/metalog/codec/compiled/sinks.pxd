# The compiled scan's two C protocols, declared once, in the lowest layer the log, the state and the analysis share:
# what a sink or a hook carries as a capsule for the log's compiled scan (``metalog.log.compiled.scan``) to call
# without a Python frame. Each module that offers or calls one cimports it from here
# (``from metalog.codec.compiled.sinks cimport ml_value_sink, ml_batch_end``).
from cpython.object cimport PyObject
from libc.stdint cimport int64_t

cdef extern from *:
    """
    #ifndef METALOG_SINKS_H
    #define METALOG_SINKS_H
    /* A value sink (capsule "metalog.value_sink.v1", on the sink's c_value_sink): one record's value at p, n bytes
       long, at offset. -1: an error is set. */
    typedef struct {
        int (*feed)(PyObject *sink, const unsigned char *p, Py_ssize_t n, int64_t offset);
    } ml_value_sink;
    /* A batch-end hook (capsule "metalog.batch_end.v1", on the hook's c_batch_end): after a batch's values, its
       base offset, last offset, max timestamp, whether it is a control batch, its size in bytes. -1: an error is
       set. */
    typedef struct {
        int (*end)(PyObject *hook, int64_t base, int64_t last, int64_t timestamp, int control, Py_ssize_t size);
    } ml_batch_end;
    #endif
    """
    ctypedef struct ml_value_sink:
        int (*feed)(object sink, const unsigned char *p, Py_ssize_t n, int64_t offset) except -1
    ctypedef struct ml_batch_end:
        int (*end)(object hook, int64_t base, int64_t last, int64_t timestamp, int control, Py_ssize_t size) except -1
