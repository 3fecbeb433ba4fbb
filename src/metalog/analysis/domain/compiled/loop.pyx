# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.analysis.domain.loop.BatchLoop``, the analysis' per-batch loop: hand-written.

The same steps at each batch end, in the same order (the module ``loop`` is the specification: read it first). The
log's compiled scan (``metalog.log.compiled.scan``) tells it of a batch's end in C, through ``c_batch_end`` (a
capsule named ``metalog.batch_end.v1`` holding a ``ml_batch_end``), so that no Python frame, tuple or list is made
per batch between the scan, the loader and the step; a batch the scan hands to its pure loop (a control batch, say)
is told through ``__call__``. It ends the batch through the loader's compiled publish where that runs (a loader's
``end_batch`` that is a ``metalog.state.compiled.publish.BatchEnd``: its C entry, which says whether a transaction
is open), else through the loader's methods; it tells the step through its C entries where the step is the compiled
twin (``step.pxd``'s ``on_leader_change`` and ``on_batch``), else through its methods. What it needs comes in one
``BatchLoopParts``.
``tests/analysis/domain/test_compiled_loop.py`` runs both twins over random logs in random batch shapes.
"""

from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport int64_t

from metalog.analysis.domain.compiled.step cimport ClusterStep
from metalog.state.compiled.publish cimport BatchEnd

from metalog.codec.compiled.sinks cimport ml_batch_end

cdef extern from *:
    """
    #ifndef METALOG_CYTHON_VERSION
    #define METALOG_CYTHON_VERSION "unknown"
    #endif
    """
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()


cdef class BatchLoop:
    """``metalog.analysis.domain.loop.BatchLoop``, compiled (see the module's docstring)."""

    cdef readonly object parts
    cdef object loader, step, leader_changes, sink, end_batch, step_batch
    cdef BatchEnd publish  # the loader's compiled end_batch, or None
    cdef ClusterStep compiled_step  # the step when it is the compiled twin, or None
    cdef readonly Py_ssize_t batches  # batches since the last hand-over
    cdef Py_ssize_t chunk_batches
    cdef public object c_batch_end

    def __init__(self, parts):
        if parts.chunk_batches < 1:
            raise ValueError(f"chunk_batches must be at least 1, not {parts.chunk_batches}")
        self.parts = parts
        self.loader, self.step, self.leader_changes, self.sink = parts.loader, parts.step, parts.leader_changes, \
            parts.sink
        self.chunk_batches = parts.chunk_batches
        self.end_batch = self.loader.end_batch  # bound once: a loader's methods are its own (its twins)
        self.publish = self.end_batch if isinstance(self.end_batch, BatchEnd) else None
        self.step_batch = self.step.batch
        self.compiled_step = self.step if isinstance(self.step, ClusterStep) else None
        self.batches = 0
        self.c_batch_end = PyCapsule_New(&BATCH_END, b"metalog.batch_end.v1", NULL)

    def __call__(self, int64_t base, int64_t last, int64_t timestamp, bint control, Py_ssize_t size):
        self.end(base, last, timestamp, control)

    cdef int end(self, int64_t base, int64_t last, int64_t timestamp, bint control) except -1:
        """The batch at ``base`` ending at ``last`` is loaded (``loop.BatchLoop.__call__``)."""
        cdef bint open_transaction
        if self.publish is not None:
            open_transaction = self.publish.end_batch(last)
        else:
            self.end_batch(last)
            open_transaction = self.loader.in_transaction
        if control:
            for leader, epoch in self.leader_changes(base):
                if self.compiled_step is not None:
                    self.compiled_step.on_leader_change(last, leader, epoch)
                else:
                    self.step.leader_change(last, leader, epoch)
        if self.compiled_step is not None:
            self.compiled_step.on_batch(last, timestamp, open_transaction)
        else:
            self.step_batch(last, timestamp, open_transaction)
        self.batches += 1
        if self.batches >= self.chunk_batches:
            self.hand_over()
        return 0

    def hand_over(self):
        """The step's rows since the last hand-over to the sink, a chunk per table."""
        self.batches = 0
        sink = self.sink
        for chunk in self.step.take().values():
            sink(chunk)

    def finish(self):
        """After the last batch: the rows not handed over yet."""
        if self.step.pending:
            self.hand_over()


cdef int _end(object hook, int64_t base, int64_t last, int64_t timestamp, int control, Py_ssize_t size) except -1:
    return (<BatchLoop>hook).end(base, last, timestamp, control)


cdef ml_batch_end BATCH_END
BATCH_END.end = _end
