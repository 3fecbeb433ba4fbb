# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.analysis.outputs.growth_count.GrowthCount``: hand-written.

The log's compiled scan (``metalog.log.compiled.scan``) hands it each data record's value as a pointer and a
length (``c_value_sink``) and each batch's end (``batch_end.c_batch_end``) without a Python object per record or
per batch; the batches the scan hands to its pure loop come as the Python calls the pure twin takes. A value whose
frame starts with two one-byte varints (every Kafka record) has its apiKey read here; any other goes through
``framing.metadata_api_key``. What it keeps, and in what order, is the pure twin's (tests hold them equal).
"""

from array import array

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport int64_t
from libc.string cimport memset

from metalog.analysis.outputs.growth_count import NOT_A_FRAME
from metalog.codec.framing import FRAME_VERSION, metadata_api_key
from metalog.errors import DecodeError

from metalog.codec.compiled.sinks cimport ml_value_sink, ml_batch_end

cdef extern from *:
    """
    #ifndef METALOG_CYTHON_VERSION
    #define METALOG_CYTHON_VERSION "unknown"
    #endif
    """
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()  # (metalog --version names it: core.twin_status)

DEF SMALL = 128  # apiKeys below this are counted in arrays (every Kafka record's); others in a dict

cdef int64_t INT64_MIN = -0x7FFFFFFFFFFFFFFF - 1
cdef unsigned char FRAME = FRAME_VERSION


cdef class GrowthCount:
    """See the pure twin."""

    cdef public object control_types, type_order, minutes, minute_batches, minute_bytes
    cdef public object type_minutes, type_keys, type_records, type_bytes
    cdef public list marks
    cdef public object c_value_sink
    cdef public BatchEnds batch_end
    cdef readonly int64_t minute_ms
    cdef int64_t first_full  # the first minute of int64 that is whole: before it, the minute is int64's first
    cdef unsigned char touched[SMALL]  # the small apiKeys of the batch being read, in the order first met
    cdef unsigned char ranked[SMALL]  # the small apiKeys in type_order's order
    cdef Py_ssize_t touched_n
    cdef int64_t batch_records[SMALL]
    cdef int64_t batch_bytes[SMALL]
    cdef int64_t type_count[SMALL]
    cdef int64_t type_size[SMALL]
    cdef dict batch_other, types_other  # the batch's, the minute's: type key -> [records, bytes]
    cdef int64_t minute, batches, size
    cdef bint counting  # a minute is being counted

    def __init__(self, control_types, int64_t minute_ms, type_order=None):
        cdef Py_ssize_t i
        if minute_ms <= 0:
            raise ValueError("a minute is a positive number of milliseconds")
        self.control_types, self.minute_ms, self.type_order = control_types, minute_ms, type_order
        for i, k in enumerate(sorted(range(SMALL), key=type_order)):
            self.ranked[i] = k
        self.first_full = -((1 << 63) // minute_ms) * minute_ms
        self.minutes, self.minute_batches, self.minute_bytes = array("q"), array("q"), array("q")
        self.type_minutes, self.type_keys, self.type_records, self.type_bytes = (array("q"), array("q"),
                                                                                   array("q"), array("q"))
        self.marks = []
        self.batch_other, self.types_other = {}, {}
        self.touched_n = 0
        memset(self.batch_records, 0, sizeof(self.batch_records))
        memset(self.batch_bytes, 0, sizeof(self.batch_bytes))
        memset(self.type_count, 0, sizeof(self.type_count))
        memset(self.type_size, 0, sizeof(self.type_size))
        self.counting = False
        self.c_value_sink = PyCapsule_New(&SINK, b"metalog.value_sink.v1", NULL)
        self.batch_end = BatchEnds(self)

    def __call__(self, value, offset):
        """The scan's sink (its pure loop's calls)."""
        if value is None:
            raise DecodeError(NOT_A_FRAME)
        cdef const unsigned char[:] view = value
        if len(value):
            self.feed(&view[0], len(value), value)
        else:
            self.feed(NULL, 0, value)

    cdef int feed(self, const unsigned char *p, Py_ssize_t n, object value) except -1:
        cdef object found
        if n > 1 and p[0] == FRAME and p[1] < 0x80:
            if not self.batch_records[p[1]]:
                self.touched[self.touched_n] = p[1]
                self.touched_n += 1
            self.batch_records[p[1]] += 1
            self.batch_bytes[p[1]] += n
            return 0
        if value is None:
            value = PyBytes_FromStringAndSize(<const char *>p, n)
        found = metadata_api_key(value)
        if found is None:
            raise DecodeError(NOT_A_FRAME)
        self.add(found, n)
        return 0

    cdef int add(self, object key, int64_t size) except -1:
        """A record of type ``key`` (an apiKey, or a control record's) and ``size`` value bytes, in the batch."""
        cdef list counts
        cdef Py_ssize_t k
        if 0 <= key < SMALL:
            k = key
            if not self.batch_records[k]:
                self.touched[self.touched_n] = <unsigned char>k
                self.touched_n += 1
            self.batch_records[k] += 1
            self.batch_bytes[k] += size
            return 0
        counts = self.batch_other.get(key)
        if counts is None:
            self.batch_other[key] = [1, size]
        else:
            counts[0] += 1
            counts[1] += size
        return 0

    cdef int end(self, int64_t base, int64_t timestamp, bint control, Py_ssize_t size) except -1:
        cdef int64_t minute = self.minute_of(timestamp)
        cdef Py_ssize_t i, k
        cdef list counts
        if not self.counting or minute != self.minute:
            self.close_minute()
            self.minute, self.counting = minute, True
        self.batches += 1
        self.size += size
        if control:
            for key, size_of in self.control_types(base):
                self.add(key, size_of)
        if control or not self.marks:
            self.marks.append((base, timestamp, bool(control)))
        for i in range(self.touched_n):
            k = self.touched[i]
            self.type_count[k] += self.batch_records[k]
            self.type_size[k] += self.batch_bytes[k]
            self.batch_records[k] = 0
            self.batch_bytes[k] = 0
        self.touched_n = 0
        if self.batch_other:
            for key, (records, size_of) in self.batch_other.items():
                counts = self.types_other.get(key)
                if counts is None:
                    self.types_other[key] = [records, size_of]
                else:
                    counts[0] += records
                    counts[1] += size_of
            self.batch_other.clear()
        return 0

    cdef inline int64_t minute_of(self, int64_t timestamp):
        """``tables.bucket_start(timestamp, minute_ms)``, in int64."""
        cdef int64_t q
        if timestamp < self.first_full:
            return INT64_MIN
        q = timestamp / self.minute_ms
        if timestamp % self.minute_ms < 0:
            q -= 1
        return q * self.minute_ms

    def close(self):
        """The last minute's counts into the columns."""
        self.close_minute()
        self.counting = False

    cdef close_minute(self):
        """The minute's row of ``log_size`` and its rows of ``growth``, its types in ``type_order``."""
        cdef Py_ssize_t i, k
        if not self.counting:
            return
        self.minutes.append(self.minute)
        self.minute_batches.append(self.batches)
        self.minute_bytes.append(self.size)
        if self.types_other:  # (a minute of control records: few) its types sorted, small and other together
            for key in sorted([k for k in range(SMALL) if self.type_count[k]] + list(self.types_other),
                              key=self.type_order):
                if 0 <= key < SMALL:
                    self.small_row(key)
                else:
                    records, size = self.types_other[key]
                    self.row(key, records, size)
            self.types_other.clear()
        else:
            for i in range(SMALL):
                k = self.ranked[i]
                if self.type_count[k]:
                    self.small_row(k)
        self.batches = self.size = 0

    cdef small_row(self, Py_ssize_t k):
        self.row(k, self.type_count[k], self.type_size[k])
        self.type_count[k] = 0
        self.type_size[k] = 0

    cdef row(self, object key, object records, object size):
        self.type_minutes.append(self.minute)
        self.type_keys.append(key)
        self.type_records.append(records)
        self.type_bytes.append(size)


cdef class BatchEnds:
    """A GrowthCount's batch-end hook: ``c_batch_end`` for the compiled scan, a call for its pure loop."""

    cdef GrowthCount count
    cdef public object c_batch_end

    def __init__(self, GrowthCount count):
        self.count = count
        self.c_batch_end = PyCapsule_New(&ENDS, b"metalog.batch_end.v1", NULL)

    def __call__(self, int64_t base, int64_t last, int64_t timestamp, control, Py_ssize_t size):
        self.count.end(base, timestamp, bool(control), size)


cdef int _feed(object sink, const unsigned char *p, Py_ssize_t n, int64_t offset) except -1:
    return (<GrowthCount>sink).feed(p, n, None)


cdef int _end(object hook, int64_t base, int64_t last, int64_t timestamp, int control, Py_ssize_t size) except -1:
    return (<BatchEnds>hook).count.end(base, timestamp, control != 0, size)


cdef ml_value_sink SINK
SINK.feed = _feed
cdef ml_batch_end ENDS
ENDS.end = _end
