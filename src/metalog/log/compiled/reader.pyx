# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of the batch loop of ``metalog.log.reader.read_batches``: hand-written.

``next_batches`` walks the whole batches of one buffer (a chunk of a segment) and makes a ``RecordBatch`` of each,
with the checks the pure loop makes: the frame (batchLength, magic, the batch fits before the end), the CRC-32C,
recordsCount and lastOffsetDelta, and how the batch follows the one before (``metalog.log.chain``). It stops at the
first batch that is not plainly right (or not wholly in the buffer, or carrying a newer epoch), and the pure loop
reads that one: it raises its own error, or accepts it and calls this again. So errors are the pure path's own.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t

cdef extern from "_log.h":
    const char *METALOG_CYTHON_VERSION
    int64_t ml_be64(const unsigned char *p) nogil
    int32_t ml_be32(const unsigned char *p) nogil
    uint32_t ml_beu32(const unsigned char *p) nogil
    int16_t ml_be16(const unsigned char *p) nogil

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()

cdef Py_ssize_t HEADER_SIZE = 61
cdef Py_ssize_t LOG_OVERHEAD = 12
cdef int32_t MIN_BATCH_LENGTH = 61 - 12
from crc32c import crc32c as _crc  # the pure path's CRC-32C


cdef object _make(object cls, object data, Py_ssize_t start, Py_ssize_t position, object source,
                  const unsigned char *h):
    """A RecordBatch of the header at h, as RecordBatch.__init__ makes it (its checks were made)."""
    b = cls.__new__(cls)
    b.data = data
    b.start = start
    b.position = position
    b.source = source
    b.base_offset = ml_be64(h)
    b.batch_length = ml_be32(h + 8)
    b.partition_leader_epoch = ml_be32(h + 12)
    b.magic = <int>h[16]
    b.crc = ml_beu32(h + 17)
    b.attributes = ml_be16(h + 21)
    b.last_offset_delta = ml_be32(h + 23)
    b.base_timestamp = ml_be64(h + 27)
    b.max_timestamp = ml_be64(h + 35)
    b.producer_id = ml_be64(h + 43)
    b.producer_epoch = ml_be16(h + 51)
    b.base_sequence = ml_be32(h + 53)
    b.records_count = ml_be32(h + 57)
    return b


def next_batches(data, Py_ssize_t off, Py_ssize_t data_pos, Py_ssize_t end, source, bint validate, bint chained,
                 int64_t next_offset, int64_t epoch, cls):
    """The batches of ``data`` (a segment's bytes from byte ``data_pos`` of its file on) from ``data[off:]`` on, up
    to file position ``end``: ``(batches, where the next one starts in data)``, stopping before the first batch the
    pure loop is to read. With ``chained``, the first must start at ``next_offset``, each carry ``epoch``, and each
    hold every offset it spans."""
    cdef Py_buffer view
    cdef list out = []
    cdef const unsigned char *p
    cdef Py_ssize_t n, size, pos
    cdef int32_t length, delta, count, bepoch
    cdef int64_t base
    cdef object whole = memoryview(data) if validate else None
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char *>view.buf
        n = view.len
        while off >= 0 and n - off >= HEADER_SIZE:
            pos = data_pos + off
            if pos >= end:
                break
            length = ml_be32(p + off + 8)
            if length < MIN_BATCH_LENGTH or p[off + 16] != 2:
                break
            size = LOG_OVERHEAD + length
            if size > end - pos or size > n - off:
                break
            base = ml_be64(p + off)
            bepoch = ml_be32(p + off + 12)
            delta = ml_be32(p + off + 23)
            count = ml_be32(p + off + 57)
            if validate and (count < 0 or delta < 0):
                break
            if chained and (base != next_offset or bepoch != epoch or <int64_t>count != <int64_t>delta + 1):
                break
            if validate and _crc(whole[off + 21:off + size]) != ml_beu32(p + off + 17):
                break
            out.append(_make(cls, data, off, pos, source, p + off))
            if chained:
                next_offset = base + count
            off += size
    finally:
        PyBuffer_Release(&view)
    return out, off
