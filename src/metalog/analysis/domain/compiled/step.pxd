# The compiled per-batch step's class, for compiled callers (the analysis' batch loop, domain/compiled/loop.pyx): its
# C entries, which the loop calls once per batch with no Python frame. See step.pyx.
cimport cython
from libc.stdint cimport int64_t, uint64_t


cdef struct Buffer:  # a growable int64 buffer
    int64_t *data
    Py_ssize_t size
    Py_ssize_t cap


cdef struct DirectorySlot:  # a directory id's 16 bytes (two halves) and its number + 1 (0: a free slot)
    uint64_t hi, lo
    Py_ssize_t number


cdef struct DirectorySlots:  # directory numbers by id, open addressing (a dict's answer kept, probes bounded)
    DirectorySlot *slots
    Py_ssize_t mask, used


cdef struct Rows:  # a table's rows as growable int64 columns, in one block: column j at data + j * stride
    int64_t *data
    Py_ssize_t size  # rows
    Py_ssize_t cap  # rows each column has room for
    Py_ssize_t stride  # values from a column's start to the next one's: cap and a cache line (STAGGER)
    Py_ssize_t width  # columns


@cython.final  # (no subclass: its methods are called directly, the small ones inlined)
cdef class ClusterStep:
    cdef public str cluster
    cdef object image_of
    # brokers by number: id, registration, what the step reads of it (BROKER_REG values), replicas per directory kind
    # (4 a broker), leaders, offline replicas, the last row's values, dirty flag, its first (broker, directory) pair
    cdef dict bnum
    cdef list bid, reg
    cdef Buffer bslot  # broker numbers + 1 by id, for ids 0 <= id < BROKER_SLOTS (0: not looked up yet)
    cdef Buffer bids, breg, bkind, blead, boff, bshown, bdirty, bfirst
    cdef Buffer dirty_b  # broker numbers whose values may have changed since the last batch
    # directories by number: the placeholders are 0, 1, 2
    cdef dict dnum
    cdef list dirs, dname
    cdef DirectorySlots dslots  # dnum's answers for directory ids of 16 bytes
    # (broker, directory) pairs by number: broker, directory, the broker's next pair, replicas, leaders, partitions
    # without a leader, whether the broker's registration lists the directory, whether a replica there is offline,
    # the last row's values, dirty flag
    cdef Buffer pb, pd, pnext, prep, plead, pless, plisted, poffline, pshown, pdirty, dirty_p
    # the counts
    cdef int64_t mv, zk, topics, partitions, offline_partitions, imbalance, offline
    cdef int64_t kinds[4]
    cdef int64_t fenced, registered, shutdown, brokers_zk, with_dirs
    cdef int64_t prev[3]
    cdef bint has_prev
    # rows since the last take
    cdef Rows timeline, brokers_rows, dir_rows
    cdef list failed, events, lost, told
    cdef list added  # a delta's partitions to count as they are now (emptied after each delta)

    # the C entries: MetadataLoader.on_publish(delta, image), a LeaderChangeMessage, a batch's rows
    cdef int on_delta(self, object delta, object image) except -1
    cdef int on_leader_change(self, int64_t offset, object leader_id, object epoch) except -1
    cdef int on_batch(self, int64_t last_offset, int64_t timestamp, bint open_transaction) except -1

    cdef Py_ssize_t _broker(self, object bid) except -1
    cdef Py_ssize_t _number_broker(self, object bid) except -1
    cdef Py_ssize_t _directory(self, object directory) except -1
    cdef Py_ssize_t _number_directory(self, object directory) except -1
    cdef Py_ssize_t _pair(self, Py_ssize_t b, Py_ssize_t d) except -1
    cdef int _pair_flags(self, Py_ssize_t p, object reg) except -1
    cdef int _set_reg(self, Py_ssize_t b, object reg) except -1
    cdef int _dirty_broker(self, Py_ssize_t b) except -1
    cdef int _dirty_pair(self, Py_ssize_t p) except -1
    cdef int _zero_counts(self) except -1
    cdef int _count(self, object image) except -1
    cdef int _changed_topics(self, dict topics, dict old_topics, list added) except -1
    cdef int _changed_brokers(self, dict brokers, dict old_brokers) except -1
    cdef bint _leader_moved(self, tuple old, tuple new) except -1
    cdef int _replace(self, object image) except -1
    cdef bint _offline(self, object reg, Py_ssize_t d) except -1
    cdef int _partition(self, tuple part, int sign) except -1
    cdef int _broker_change(self, object bid, object old, object new) except -1
    cdef int _lost_directories(self, object old, object new) except -1
    cdef void _codes(self, int64_t *out) noexcept
    cdef int _failures(self, int64_t last_offset, int64_t timestamp) except -1
    cdef int _broker_values(self, Py_ssize_t b, int64_t *out) except -1
    cdef int _pair_values(self, Py_ssize_t p, int64_t *out) except -1
    cdef bint _before(self, int64_t x, int64_t y, bint pairs) except -1
    cdef int _sort(self, Buffer *items, bint pairs) except -1
    cdef int _changed_rows(self, int64_t last_offset, int64_t timestamp) except -1


cdef class Published:
    cdef readonly ClusterStep step
