# The C-level entry of the loader's per-batch publish, for compiled callers (the analysis' batch loop): see
# publish.pyx. A base class without attributes, so that a caller built against it does not depend on the twin's
# fields; the twin (publish.pyx's ``BatchPublish``) overrides ``end_batch``.
from libc.stdint cimport int64_t


cdef class BatchEnd:
    # MetadataLoader.end_batch(last_offset): 1 when a transaction is open after it (nothing published: the loader's
    # in_transaction), 0 when published, -1 with an exception set
    cdef int end_batch(self, int64_t last_offset) except -1
