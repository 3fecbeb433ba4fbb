# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.log.reader.next_batches``, the batch loop's step: hand-written.

``next_batches`` walks the whole batches of one buffer (a chunk of a segment) and makes a ``RecordBatch`` of each,
with the checks the pure step makes: the frame (batchLength, magic, the batch fits before the end), the CRC-32C,
recordsCount and lastOffsetDelta, and how the batch follows the one before (``metalog.log.chain``). It stops at the
first batch that is not plainly right (or not wholly in the buffer, or carrying a newer epoch), and the pure step
reads that one: it raises its own error, or accepts it. So errors are the pure path's own.

The header's offsets are ``metalog.log.header``'s, under the same names; ``LAYOUT`` exports them, and the log layer
refuses a build whose ``LAYOUT`` disagrees (``metalog.log.header.check_layout``).
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t

cdef extern from "_log.h":
    const char *METALOG_CYTHON_VERSION
    int64_t ml_be64(const unsigned char *p) nogil
    int32_t ml_be32(const unsigned char *p) nogil
    uint32_t ml_beu32(const unsigned char *p) nogil
    int16_t ml_be16(const unsigned char *p) nogil
    void ml_crc_init()
    uint32_t ml_crc32c(const unsigned char *p, Py_ssize_t n) nogil
    Py_ssize_t ml_member_offset(object descr)
    int ml_generic_alloc(object cls)
    object ml_alloc(object cls)
    void ml_put_slot(object o, Py_ssize_t off, object v)

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()
ml_crc_init()

include "_header.pxi"

cdef Py_ssize_t HEADER_SIZE = RECORDS_OFFSET
cdef Py_ssize_t LARGE = 4096  # batches from this size on are checked by crc32c's own (interleaved) code
from crc32c import crc32c as _crc  # the pure path's CRC-32C


cdef object _layout = None  # the class whose slot offsets are below
cdef Py_ssize_t _off[17]
SLOTS = ("data", "start", "position", "source", "base_offset", "batch_length", "partition_leader_epoch", "magic",
         "crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
         "base_sequence", "records_count")


cdef int _learn(object cls) except -1:
    """The offsets of RecordBatch's slots (its member descriptors), checked: a class of another layout is made
    through its constructor's slots by name instead (``_make``)."""
    global _layout
    cdef Py_ssize_t i
    for i, name in enumerate(SLOTS):
        _off[i] = ml_member_offset(cls.__dict__.get(name))
        if _off[i] <= 0:
            return 0
    _layout = cls
    return 0


cdef inline void _put(object o, Py_ssize_t i, object v):
    ml_put_slot(o, _off[i], v)


cdef object _make(object cls, object data, Py_ssize_t start, Py_ssize_t position, object source,
                  const unsigned char *h):
    """A RecordBatch of the header at h, as RecordBatch.__init__ makes it (its checks were made)."""
    if cls is not _layout:
        _learn(cls)
    if cls is not _layout or not ml_generic_alloc(cls):
        b = cls.__new__(cls)
        for name, v in zip(SLOTS, _fields(data, start, position, source, h)):
            setattr(b, name, v)
        return b
    b = ml_alloc(cls)
    for i, v in enumerate(_fields(data, start, position, source, h)):
        _put(b, i, v)
    return b


cdef inline tuple _fields(object data, Py_ssize_t start, Py_ssize_t position, object source, const unsigned char *h):
    return (data, start, position, source, ml_be64(h + BASE_OFFSET_OFFSET), ml_be32(h + LENGTH_OFFSET),
            ml_be32(h + PARTITION_LEADER_EPOCH_OFFSET), <int>h[MAGIC_OFFSET], ml_beu32(h + CRC_OFFSET),
            ml_be16(h + ATTRIBUTES_OFFSET), ml_be32(h + LAST_OFFSET_DELTA_OFFSET), ml_be64(h + BASE_TIMESTAMP_OFFSET),
            ml_be64(h + MAX_TIMESTAMP_OFFSET), ml_be64(h + PRODUCER_ID_OFFSET), ml_be16(h + PRODUCER_EPOCH_OFFSET),
            ml_be32(h + BASE_SEQUENCE_OFFSET), ml_be32(h + RECORDS_COUNT_OFFSET))


def next_batches(data, Py_ssize_t off, Py_ssize_t data_pos, Py_ssize_t end, walk):
    """The batches of ``data`` (a segment's bytes from byte ``data_pos`` of its file on) from ``data[off:]`` on, up
    to file position ``end``: ``(batches, where the next one starts in data)``, stopping before the first batch the
    pure step is to read. ``walk`` (``metalog.log.reader.BatchWalk``) says the rest: with its ``chain``, the first
    must start at the chain's next offset, each carry its epoch, and each hold every offset it spans; at most
    ``walk.most`` batches (the caller yields them one by one: a whole file's batches made at once would only keep
    the cycle collector busy)."""
    cdef Py_buffer view
    cdef list out = []
    cdef const unsigned char *p
    cdef const unsigned char *h
    cdef Py_ssize_t n, size, pos
    cdef Py_ssize_t most = walk.most
    cdef int32_t length, delta, count, bepoch
    cdef int64_t base, next_offset = -1, epoch = -1
    cdef bint validate = walk.validate
    chain = walk.chain
    cdef bint chained = chain is not None
    source, cls = walk.source, walk.batch_class
    if chained:
        next_offset, epoch = chain.next_offset, chain.epoch
    cdef object whole = memoryview(data) if validate else None
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char *>view.buf
        n = view.len
        while off >= 0 and n - off >= HEADER_SIZE and len(out) < most:
            pos = data_pos + off
            if pos >= end:
                break
            h = p + off
            length = ml_be32(h + LENGTH_OFFSET)
            if length < MIN_BATCH_LENGTH or h[MAGIC_OFFSET] != MAGIC:
                break
            size = LOG_OVERHEAD + length
            if size > end - pos or size > n - off:
                break
            base = ml_be64(h + BASE_OFFSET_OFFSET)
            bepoch = ml_be32(h + PARTITION_LEADER_EPOCH_OFFSET)
            delta = ml_be32(h + LAST_OFFSET_DELTA_OFFSET)
            count = ml_be32(h + RECORDS_COUNT_OFFSET)
            if validate and (count < 0 or delta < 0):
                break
            if chained and (base != next_offset or bepoch != epoch or <int64_t>count != <int64_t>delta + 1):
                break
            if validate and (_crc(whole[off + ATTRIBUTES_OFFSET:off + size]) if size >= LARGE else
                             ml_crc32c(h + ATTRIBUTES_OFFSET, size - ATTRIBUTES_OFFSET)) != ml_beu32(h + CRC_OFFSET):
                break
            out.append(_make(cls, data, off, pos, source, h))
            if chained:
                next_offset = base + count
            off += size
    finally:
        PyBuffer_Release(&view)
    return out, off
