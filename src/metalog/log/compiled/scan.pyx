# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.log.scan.scan_into``, replay's read loop: hand-written.

It walks the batches of a mapped segment as the pure loop does (frame, CRC-32C, the chain's offsets and epoch),
reads the records of data batches in KRaft's form (attributes, timestamp delta 0, offset delta = index, null key, a
value that is not empty, no headers) and hands each value in [first, last] to the sink. Any other batch (compressed,
control batches, whose records the pure loop checks against KRaft's rules, records in another form, damage, a newer
epoch) goes to the pure loop, one batch at a time, which reads
it or raises its own error: errors are the pure loop's own.

The header's offsets are ``metalog.log.header``'s, under the same names (``LAYOUT``, checked when the log layer loads
this module: ``metalog.log.header.check_layout``).

A sink that carries ``c_value_sink`` (a capsule named ``metalog.value_sink.v1`` holding a ``ml_value_sink``: the
compiled replay of ``metalog.state.compiled.loader``) is handed each value as a pointer and a length, without a
bytes object; any other sink is called with the value's bytes. A batch-end hook that carries ``c_batch_end`` (a
capsule named ``metalog.batch_end.v1`` holding a ``ml_batch_end``: the analysis' loop,
``metalog.analysis.domain.compiled.loop``) is told of each batch's end in C; any other hook is called.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int32_t, int64_t, uint32_t

from metalog.errors import DecodeError, LogError

cdef extern from "_log.h":
    const char *METALOG_CYTHON_VERSION
    int64_t ml_be64(const unsigned char *p) nogil
    int32_t ml_be32(const unsigned char *p) nogil
    uint32_t ml_beu32(const unsigned char *p) nogil
    void ml_crc_init()
    uint32_t ml_crc32c(const unsigned char *p, Py_ssize_t n) nogil

from metalog.codec.compiled.sinks cimport ml_value_sink, ml_batch_end

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()
ml_crc_init()

from crc32c import crc32c as _crc  # the pure path's CRC-32C, for large batches (it is faster on long inputs)

include "_header.pxi"

cdef Py_ssize_t HEADER_SIZE = RECORDS_OFFSET
cdef Py_ssize_t KRAFT_FAST_MAX = 8192
cdef Py_ssize_t LARGE = 4096  # batches from this size on are checked by crc32c's own (interleaved) code
cdef int CONTROL_FLAG = 0x20
cdef int UNUSUAL = 0x07 | 0x08  # compression, log-append time
cdef int64_t MAX_BASE = 0x7FFFFFFFFFFFFFFF - 8192  # offsets past it are the pure loop's (Python ints)


cdef inline int _varint12(const unsigned char *p, Py_ssize_t limit, Py_ssize_t *pos, Py_ssize_t *out):
    """A non-negative zigzag varint of one or two bytes (kraft_values' forms): 1, or 0 for anything else."""
    cdef Py_ssize_t i = pos[0]
    cdef unsigned int b, c
    if i >= limit:
        return 0
    b = p[i]
    if b < 0x80:
        if b & 1:
            return 0
        out[0] = b >> 1
        pos[0] = i + 1
        return 1
    if i + 1 >= limit:
        return 0
    c = p[i + 1]
    if c >= 0x80 or b & 1:
        return 0
    out[0] = ((b & 0x7F) | (c << 7)) >> 1
    pos[0] = i + 2
    return 1


cdef inline Py_ssize_t _kraft_ends(const unsigned char *p, Py_ssize_t pos, Py_ssize_t limit, Py_ssize_t count,
                                   Py_ssize_t *starts, Py_ssize_t *ends):
    """The values of ``count`` records at p[pos:limit] in KRaft's form, as ``kraft_values`` reads them: their
    starts and ends, and 1; or 0 where kraft_values returns None."""
    cdef Py_ssize_t i, end, n, q
    cdef unsigned int z
    for i in range(count):
        if not _varint12(p, limit, &pos, &n):
            return 0
        end = pos + n
        # the head: attributes 0, timestamp delta 0, offset delta i (zigzag, canonical), key length -1
        if pos + 2 > limit or p[pos] != 0 or p[pos + 1] != 0:
            return 0
        q = pos + 2
        z = <unsigned int>i << 1
        while z >= 0x80:
            if q >= limit or p[q] != ((z & 0x7F) | 0x80):
                return 0
            z >>= 7
            q += 1
        if q + 1 >= limit or p[q] != z or p[q + 1] != 1:
            return 0
        q += 2
        if not _varint12(p, limit, &q, &n) or n == 0:  # an empty value is not KRaft's
            return 0
        if q + n + 1 != end or end > limit or p[end - 1] != 0:
            return 0
        starts[i] = q
        ends[i] = end - 1
        pos = end
    return 1 if pos == limit else 0


cdef void *_capsule(obj, str attribute, const char *name) except? NULL:
    """The C entry point a sink or hook carries (a capsule named ``name`` in its ``attribute``), or NULL."""
    cap = getattr(obj, attribute, None)
    if cap is not None and PyCapsule_IsValid(cap, name):
        return PyCapsule_GetPointer(cap, name)
    return NULL


def scan_into(scan, Py_ssize_t pos, Py_ssize_t chunk, pure):
    """``metalog.log.scan.scan_into``, compiled: what ``scan`` (a ``metalog.log.scan.Scan``) asks of the batches
    that start in the next ``chunk`` bytes; ``pure`` is the pure loop, to which it hands the batches it does not read
    (see the module's docstring)."""
    data, source, chain = scan.data, scan.source, scan.chain
    cdef Py_ssize_t end = scan.end
    first_offset, last_offset, sink, hook, collect = scan.first, scan.last, scan.sink, scan.batch_end, scan.collect
    # [first, last] as int64 (an offset is one: a bound past int64 means "all")
    cdef int64_t first = min(max(first_offset, -0x8000000000000000), 0x7FFFFFFFFFFFFFFF)
    cdef int64_t last = min(max(last_offset, -0x8000000000000000), 0x7FFFFFFFFFFFFFFF)
    cdef Py_buffer view
    cdef const unsigned char *p
    cdef const unsigned char *h
    cdef Py_ssize_t until = min(end, pos + chunk), stop, i, avail
    cdef int32_t length, epoch, count, delta
    cdef int64_t base, max_ts = 0, next_offset = chain.next_offset, epoch_floor = chain.epoch, offset = -1
    cdef int attrs
    cdef Py_ssize_t passed = 0
    cdef object timestamp = None, value, values
    cdef Py_ssize_t starts_local[64]
    cdef Py_ssize_t ends_local[64]
    cdef Py_ssize_t *starts = starts_local
    cdef Py_ssize_t *ends = ends_local
    cdef bytearray spill = None
    cdef ml_value_sink *csink = <ml_value_sink *>_capsule(sink, "c_value_sink", b"metalog.value_sink.v1")
    cdef ml_batch_end *cend = <ml_batch_end *>_capsule(hook, "c_batch_end", b"metalog.batch_end.v1")
    cdef object whole = None
    cdef bint collecting = collect is not None
    cdef bint ending = hook is not None and not collecting
    cdef bint ok
    cdef bint feeding = False  # the sink is being handed a batch's values
    cdef bint fast_ts = False  # the last timestamp is max_ts (a batch read here; made a Python int only when returned)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char *>view.buf
        avail = min(end, view.len)  # what this loop reads itself; the pure loop is told ``end`` as given
        while pos < until:
            if next_offset > last:
                return pos, passed, max_ts if fast_ts else timestamp, True
            ok = False
            if avail - pos >= HEADER_SIZE:
                h = p + pos
                length = ml_be32(h + LENGTH_OFFSET)
                stop = pos + LOG_OVERHEAD + length
                attrs = (h[ATTRIBUTES_OFFSET] << 8) | h[ATTRIBUTES_OFFSET + 1]
                base = ml_be64(h + BASE_OFFSET_OFFSET)
                epoch = ml_be32(h + PARTITION_LEADER_EPOCH_OFFSET)
                delta = ml_be32(h + LAST_OFFSET_DELTA_OFFSET)
                count = ml_be32(h + RECORDS_COUNT_OFFSET)
                if h[MAGIC_OFFSET] == MAGIC and length >= MIN_BATCH_LENGTH and stop <= avail and not attrs & UNUSUAL and \
                        base == next_offset and epoch == epoch_floor and <int64_t>count == <int64_t>delta + 1 and \
                        not attrs & CONTROL_FLAG and 0 < count <= KRAFT_FAST_MAX and base <= MAX_BASE:
                    if stop - pos - ATTRIBUTES_OFFSET >= LARGE:
                        if whole is None:
                            whole = memoryview(data)
                        ok = _crc(whole[pos + ATTRIBUTES_OFFSET:stop]) == ml_beu32(h + CRC_OFFSET)
                    else:
                        ok = ml_crc32c(h + ATTRIBUTES_OFFSET, stop - pos - ATTRIBUTES_OFFSET) == ml_beu32(h + CRC_OFFSET)
                    if ok:
                        if count > 64:
                            if spill is None or len(spill) < count * 2 * sizeof(Py_ssize_t):  # (its bytes unset:
                                # _kraft_ends sets every one read; a zeroed 128 KiB per call was 0.5% of a replay)
                                spill = PyByteArray_FromStringAndSize(NULL, count * 2 * sizeof(Py_ssize_t))
                            starts = <Py_ssize_t *><char *>spill
                            ends = starts + count
                        else:
                            starts, ends = starts_local, ends_local
                        ok = _kraft_ends(p, pos + HEADER_SIZE, stop, count, starts, ends) == 1
            if not ok:  # the pure loop reads this batch, or says what is wrong with it
                chain.next_offset, chain.epoch = next_offset, epoch_floor
                got = pure(scan, pos, 1)
                next_offset, epoch_floor = chain.next_offset, chain.epoch
                pos = got[0]
                passed += got[1]
                if got[2] is not None:
                    timestamp, fast_ts = got[2], False
                if got[3]:
                    return pos, passed, max_ts if fast_ts else timestamp, True
                continue
            next_offset = base + count
            max_ts = ml_be64(p + pos + MAX_TIMESTAMP_OFFSET)
            fast_ts = True
            if collecting:
                values = [PyBytes_FromStringAndSize(<const char *>p + starts[i], ends[i] - starts[i])
                          for i in range(count)]
                collect.append((base, base + count - 1, max_ts, False, values))
                pos = stop
                continue
            feeding = True
            for i in range(count):
                offset = base + i
                if offset < first or offset > last:
                    continue
                if csink is not NULL:
                    csink.feed(sink, p + starts[i], ends[i] - starts[i], offset)
                else:
                    sink(PyBytes_FromStringAndSize(<const char *>p + starts[i], ends[i] - starts[i]), offset)
                passed += 1
            feeding = False
            if ending and base + count - 1 >= first:
                if cend is not NULL:
                    cend.end(hook, base, base + count - 1, max_ts, 0, stop - pos)
                else:
                    hook(base, base + count - 1, max_ts, False, stop - pos)
            pos = stop
    except DecodeError as e:  # (one try per call, not per batch: entering one saves the exception state)
        if not feeding:  # the sink's DecodeError names its record's offset; any other error is as it was
            raise
        raise LogError(f"offset {offset}: {e}", file=source) from None
    finally:
        chain.next_offset, chain.epoch = next_offset, epoch_floor
        whole = None
        PyBuffer_Release(&view)
    return pos, passed, max_ts if fast_ts else timestamp, next_offset > last
