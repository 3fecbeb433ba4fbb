# The C-level entries of the loader's per-batch publish, for compiled callers: see publish.pyx.
from cpython.object cimport PyObject
from libc.stdint cimport int64_t


# The batch end a compiled batch loop (the analysis') calls. A base class without attributes, so that a caller built
# against it does not depend on the twin's fields; the twin (publish.pyx's ``BatchPublish``) overrides ``end_batch``.
cdef class BatchEnd:
    # MetadataLoader.end_batch(last_offset): 1 when a transaction is open after it (nothing published: the loader's
    # in_transaction), 0 when published, -1 with an exception set
    cdef int end_batch(self, int64_t last_offset) except -1


# The publish told to a subscriber in C: a loader's ``on_publish`` that carries ``c_on_publish``, a capsule of this
# name holding an ``ml_on_publish``, is told each publish the compiled twin makes through it, with no Python frame;
# any other ``on_publish`` is called ``(delta, image)`` from Python, as the pure loader calls every one.
cdef extern from *:
    """
    #ifndef METALOG_ON_PUBLISH_H
    #define METALOG_ON_PUBLISH_H
    #define ML_ON_PUBLISH_NAME "metalog.on_publish.v1"
    /* MetadataLoader.on_publish(delta, image) of the subscriber: Py_None for either. -1: an error is set. */
    typedef struct {
        int (*published)(PyObject *subscriber, PyObject *delta, PyObject *image);
    } ml_on_publish;
    #endif
    """
    const char *ML_ON_PUBLISH_NAME
    ctypedef struct ml_on_publish:
        int (*published)(object subscriber, object delta, object image) except -1
