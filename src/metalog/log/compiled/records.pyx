# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of RecordBatch's record decoder (``metalog.log.batch._decode_records``): hand-written.

``decode_records`` reads the records of one batch's ``RecordArea`` into the same ``Record`` tuples, made
untracked by the cycle collector (a batch keeps a thousand of them alive, and a collection that walks them
costs more than reading them). It returns None for anything outside the forms it reads, damage included;
the pure decoder then reads it or raises its own error, so errors are the pure path's by construction.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLongLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t

cdef extern from "_log.h":
    const char *METALOG_CYTHON_VERSION
    int ml_varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int64_t *out) nogil
    int ml_varlong(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int64_t *out) nogil
    int ml_add_overflows(int64_t a, int64_t b, int64_t *out) nogil
    object ml_new_tuple_of(object cls, Py_ssize_t n)
    void ml_untrack(object o)

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()

cdef Py_ssize_t MIN_RECORD_SIZE = 7
cdef tuple NO_HEADERS = ()
cdef tuple SMALL = tuple(range(256))  # a record's attributes byte as an int


cdef object NOT_READ = object()  # what _nullable_bytes returns where the pure decoder must decide


cdef inline object _nullable_bytes(const unsigned char *p, Py_ssize_t *at, Py_ssize_t end):
    """A varint length and that many bytes at p[*at:end] (-1: None), *at moved past them; NOT_READ where the
    length does not fit."""
    cdef int64_t n
    cdef object out
    if not ml_varint(p, end, at, &n) or n < -1 or n > end - at[0]:
        return NOT_READ
    if n < 0:
        return None
    out = PyBytes_FromStringAndSize(<const char *>p + at[0], <Py_ssize_t>n)
    at[0] += <Py_ssize_t>n
    return out


cdef object _headers(const unsigned char *p, Py_ssize_t *at, Py_ssize_t end):
    """The headers of a record at p[*at:end] as a tuple of (str, bytes | None), or None where the pure decoder must
    decide."""
    cdef Py_ssize_t pos = at[0]
    cdef int64_t count, n
    cdef Py_ssize_t i
    cdef tuple out, pair
    if not ml_varint(p, end, &pos, &count) or count < 0 or count > (end - pos) // 2:
        return None
    out = PyTuple_New(<Py_ssize_t>count)
    for i in range(<Py_ssize_t>count):
        if not ml_varint(p, end, &pos, &n) or n < 0 or n > end - pos:
            return None
        try:
            key = PyUnicode_DecodeUTF8(<const char *>p + pos, <Py_ssize_t>n, NULL)
        except UnicodeDecodeError:
            return None
        pos += <Py_ssize_t>n
        value = _nullable_bytes(p, &pos, end)
        if value is NOT_READ:
            return None
        pair = PyTuple_New(2)
        Py_INCREF(key)
        PyTuple_SET_ITEM(pair, 0, key)
        Py_INCREF(value)
        PyTuple_SET_ITEM(pair, 1, value)
        Py_INCREF(pair)
        PyTuple_SET_ITEM(out, i, pair)
    at[0] = pos
    return out


# metalog.log.batch.RecordArea's fields, in its order: the log layer refuses a build whose AREA_FIELDS differ from
# RecordArea._fields (then the pure decoder runs). Read by index, not by name: a RecordArea is made per batch, and
# seven attribute lookups would cost more than the call's nine positionals did.
cdef enum:
    DATA, BEGIN, LIMIT, RECORDS_COUNT, BASE_OFFSET, BASE_TIMESTAMP, LOG_APPEND_TIME, AREA_SIZE

AREA_FIELDS = ("data", "begin", "limit", "records_count", "base_offset", "base_timestamp", "log_append_time")


cdef struct Bounds:  # a RecordArea's numbers
    Py_ssize_t pos, limit, count
    int64_t base_offset, base_timestamp


cdef object _records(const unsigned char *p, Bounds area, object log_append_time, object record_cls,
                     bint kraft_data):
    cdef Py_ssize_t pos = area.pos, limit = area.limit, count = area.count
    cdef int64_t base_offset = area.base_offset, base_timestamp = area.base_timestamp
    cdef list out = PyList_New(count)
    cdef Py_ssize_t i, end
    cdef int64_t size, ts_delta, offset_delta, offset, timestamp
    cdef int64_t last_timestamp = 0
    cdef object ts_obj = None
    cdef object key, value, headers, rec, item
    cdef unsigned char attributes
    for i in range(count):
        # every item of ``out`` is set before anything can see it: a refusal drops the list (its unset items are
        # NULL, which a list's deallocation skips)
        if not ml_varint(p, limit, &pos, &size) or size < MIN_RECORD_SIZE - 1 or size > limit - pos:
            return None
        end = pos + <Py_ssize_t>size
        attributes = p[pos]
        pos += 1
        if not ml_varlong(p, end, &pos, &ts_delta) or not ml_varint(p, end, &pos, &offset_delta):
            return None
        if pos < end and p[pos] == 1:  # zigzag -1: a null key, KRaft's convention
            key = None
            pos += 1
        else:
            key = _nullable_bytes(p, &pos, end)
            if key is NOT_READ:
                return None
        value = _nullable_bytes(p, &pos, end)
        if value is NOT_READ:
            return None
        if pos < end and p[pos] == 0:
            headers = NO_HEADERS
            pos += 1
        else:
            headers = _headers(p, &pos, end)
            if headers is None:
                return None
        if pos != end or ml_add_overflows(base_offset, offset_delta, &offset):
            return None
        if kraft_data and (key is not None or value is None or len(<bytes>value) == 0 or len(<tuple>headers) != 0
                           or ts_delta != 0 or offset_delta != i):
            return None  # not in the form of KRaft's data records: the pure decoder decides
        if log_append_time is None:
            if ml_add_overflows(base_timestamp, ts_delta, &timestamp):
                return None
            if ts_obj is None or timestamp != last_timestamp:
                ts_obj = PyLong_FromLongLong(timestamp)
                last_timestamp = timestamp
        else:
            ts_obj = log_append_time
        rec = ml_new_tuple_of(record_cls, 6)
        item = PyLong_FromLongLong(offset)
        Py_INCREF(item)
        PyTuple_SET_ITEM(rec, 0, item)
        Py_INCREF(ts_obj)
        PyTuple_SET_ITEM(rec, 1, ts_obj)
        Py_INCREF(key)
        PyTuple_SET_ITEM(rec, 2, key)
        Py_INCREF(value)
        PyTuple_SET_ITEM(rec, 3, value)
        Py_INCREF(headers)
        PyTuple_SET_ITEM(rec, 4, headers)
        item = SMALL[attributes]
        Py_INCREF(item)
        PyTuple_SET_ITEM(rec, 5, item)
        ml_untrack(rec)
        Py_INCREF(rec)
        PyList_SET_ITEM(out, i, rec)
    if pos != limit:
        return None
    return out


def decode_records(area, record_cls, bint kraft_data=False):
    """The records of ``area`` (``metalog.log.batch.RecordArea``, its ``data`` any one-dimensional byte buffer) as ``record_cls`` tuples, exactly as ``metalog.log.batch._decode_records`` reads
    them; None where that decoder must decide (damage, or a form this one leaves to it: varints past 32 bits, offsets
    or timestamps past int64). ``kraft_data``: also None when a record is not in the form of KRaft's data records (a
    key, no or an empty value, headers, a timestamp delta, an offset delta other than its index):
    ``RecordBatch.records`` then says which rule of KRaft's it breaks."""
    cdef Py_buffer view
    cdef Bounds bounds
    if not isinstance(area, tuple) or len(<tuple>area) != AREA_SIZE:
        raise TypeError(f"decode_records takes a RecordArea, not {type(area).__name__}")
    cdef tuple fields = <tuple>area
    bounds.pos, bounds.limit, bounds.count = fields[BEGIN], fields[LIMIT], fields[RECORDS_COUNT]
    bounds.base_offset, bounds.base_timestamp = fields[BASE_OFFSET], fields[BASE_TIMESTAMP]
    if bounds.count < 0 or bounds.pos < 0 or bounds.limit < bounds.pos or \
            bounds.count > (bounds.limit - bounds.pos) // MIN_RECORD_SIZE:
        return None
    PyObject_GetBuffer(fields[DATA], &view, PyBUF_SIMPLE)
    try:
        if bounds.limit > view.len:
            return None
        return _records(<const unsigned char *>view.buf, bounds, fields[LOG_APPEND_TIME], record_cls, kraft_data)
    finally:
        PyBuffer_Release(&view)
