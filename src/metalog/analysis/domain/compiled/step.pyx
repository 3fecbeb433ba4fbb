# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.analysis.domain.step.ClusterStep``: hand-written.

The same counts, kept from the same deltas by the same rules, and the same rows, in the same order (the module
``step`` is the specification: read it first). Counts live in C arrays by broker, directory and (broker, directory)
number; a batch's timeline row is 20 int64 appended to 20 columns (``Rows``: one block, a column after another),
broker_timeline and directory_timeline rows the same, events and directory failures (rare) Python tuples. ``take``
copies each column whole into an ``array('q')``, and keeps the block for the next rows. Directory ids and names stay Python objects; what the step reads of a broker's registration is read once,
when it changes, into C arrays (the broker's and each of its directories'). A broker's number is found through a C
array indexed by its id (ids 0 to 65,535), a directory's through a table of ids' 16 bytes (within a few probes of
their slot); the dicts answer for the others, and for the first look-up of each, so the numbers are the pure twin's.

It is called in C where its callers are compiled: the loader's compiled publish tells it each delta through
``published``'s ``c_on_publish`` (``state/compiled/publish.pxd``'s ``ml_on_publish``), reading the delta's fields at
their slots and a partition's at its index, each found from the class that defines it (``MetadataDelta``,
``TopicDelta``, ``PartitionRegistration``); the analysis' compiled loop calls ``on_batch`` and ``on_leader_change``
(``step.pxd``). From Python, ``published(delta, image)``, ``batch`` and ``leader_change`` run the same code.
``tests/analysis/domain/test_compiled_step.py`` runs both twins on random histories in random batch shapes.
"""

from cpython.array cimport array, clone
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItemWithError, PyDict_Next
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_TYPE
from cpython.pycapsule cimport PyCapsule_New
from cpython.tuple cimport PyTuple_Check, PyTuple_GET_SIZE
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset

from metalog.codec.compiled._reader cimport ml_field, ml_member_offset
from metalog.state.compiled.publish cimport ML_ON_PUBLISH_NAME, ml_on_publish

from metalog.analysis.domain.columns import Chunk, Coded
from metalog.analysis.domain.schema import (
    BROKER_STATES,
    BROKERS,
    DIR_TRANSITIONS,
    DIRECTORIES,
    EVENT_KINDS,
    EVENTS,
    FAILURES,
    PHASES,
    TIMELINE,
)
from metalog.analysis.domain.step import ZK_NAMES, version_names
from metalog.codec.uuid import LOST, MIGRATING, UNASSIGNED
from metalog.state.delta import MetadataDelta, TopicDelta
from metalog.state.image import MetadataImage, PartitionRegistration

cdef extern from *:
    """
    #ifndef METALOG_CYTHON_VERSION
    #define METALOG_CYTHON_VERSION "unknown"
    #endif
    """
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()

DEF TIMELINE_WIDTH = 20  # a timeline row: last_offset, timestamp, 4 codes, 14 counts
DEF BROKER_WIDTH = 13  # last_offset, timestamp, broker, then the broker's 10 values
DEF DIRECTORY_WIDTH = 9  # last_offset, timestamp, broker, directory, then its 5 values
DEF BROKER_VALUES = 10
DEF PAIR_VALUES = 5
# a block's columns start this many values (a cache line) apart from where a power of two of rows would put them, so
# that a row's stores, one a column, fall in different cache sets (``Rows.stride``)
DEF STAGGER = 8
DEF BROKER_REG = 4  # a broker's values from its registration: state, in controlled shutdown, migrating, directories
cdef int64_t NO_LEADER = -1
cdef int LOST_DIR = 2, ASSIGNED = 3
cdef int PHASE_NATIVE = 0, PHASE_PRE = 1, PHASE_HYBRID = 2, PHASE_DUAL = 3, PHASE_POST = 4
cdef int NOT_STARTED = 0, IN_PROGRESS = 1, COMPLETE = 2
cdef int UNREGISTERED = 0, FENCED = 1, UNFENCED = 2
cdef int PHASE_CHANGE = 0, DIR_TRANSITION = 1, METADATA_VERSION = 2, DIRECTORY_FAILURE = 3, ABORTED = 4
cdef int CONTROLLER_LEADER = 5


cdef int grow(Buffer *b, Py_ssize_t need) except -1:
    """Room for ``need`` more values, zeroed."""
    cdef Py_ssize_t cap = b.cap
    cdef int64_t *data
    if b.size + need <= cap:
        return 0
    while cap < b.size + need:
        cap = cap * 2 if cap else 64
    data = <int64_t *>realloc(b.data, cap * sizeof(int64_t))
    if data is NULL:
        raise MemoryError()
    memset(data + b.cap, 0, (cap - b.cap) * sizeof(int64_t))
    b.data, b.cap = data, cap
    return 0


cdef int more_rows(Rows *t) except -1:
    """Room for twice as many rows (256 at first), each column moved to its place in the new block."""
    cdef Py_ssize_t cap = t.cap * 2 if t.cap else 256, j
    cdef Py_ssize_t stride = cap + STAGGER
    cdef int64_t *data = <int64_t *>malloc(stride * t.width * sizeof(int64_t))
    if data is NULL:
        raise MemoryError()
    for j in range(t.width):
        memcpy(data + j * stride, t.data + j * t.stride, t.size * sizeof(int64_t))
    free(t.data)
    t.data, t.cap, t.stride = data, cap, stride
    return 0


cdef inline int put_row(Rows *t, const int64_t *values) except -1:
    """A row of ``t.width`` ``values`` at the end of ``t``'s columns."""
    cdef Py_ssize_t j, stride, width = t.width
    cdef int64_t *at
    if t.size == t.cap:
        more_rows(t)
    stride, at = t.stride, t.data + t.size
    for j in range(width):  # (stride and the place in locals: a value stored is not a field of ``t``'s)
        at[0] = values[j]
        at += stride
    t.size += 1
    return 0


cdef inline int64_t *push(Buffer *b, Py_ssize_t n) except NULL:
    """``n`` more values at the end: a pointer to them (zeroed)."""
    grow(b, n)
    cdef int64_t *at = b.data + b.size
    b.size += n
    return at


# broker ids below this are numbered through a C array indexed by id (grown, doubling, as far as the largest id
# seen: at most BROKER_SLOTS int64s however hostile the log), the others through the dict
DEF BROKER_SLOTS = 65536
# a directory id's slot is one of the PROBES after its hash's: past them (ids made to collide), the dict answers alone
DEF PROBES = 8


cdef inline Py_ssize_t slot_at(uint64_t hi, uint64_t lo, Py_ssize_t mask) noexcept:
    cdef uint64_t h = (hi ^ (lo * <uint64_t>0x9E3779B97F4A7C15)) * <uint64_t>0xBF58476D1CE4E5B9
    return <Py_ssize_t>((h ^ (h >> 31)) & <uint64_t>mask)


cdef inline Py_ssize_t slot_number(DirectorySlots *t, uint64_t hi, uint64_t lo) noexcept:
    """The number kept for the id (``hi``, ``lo``), or -1."""
    cdef Py_ssize_t i, n
    cdef DirectorySlot *e
    if t.slots is NULL:
        return -1
    i = slot_at(hi, lo, t.mask)
    for n in range(PROBES):
        e = t.slots + i
        if not e.number:
            return -1
        if e.hi == hi and e.lo == lo:
            return e.number - 1
        i = (i + 1) & t.mask
    return -1


cdef int put_slot(DirectorySlots *t, uint64_t hi, uint64_t lo, Py_ssize_t number) except -1:
    """The id (``hi``, ``lo``) is directory ``number`` (kept unless its probes are full); the table doubles at
    half full."""
    cdef DirectorySlot *old = t.slots
    cdef Py_ssize_t size = t.mask + 1 if old is not NULL else 0, i, n
    cdef DirectorySlot *e
    if old is NULL or 2 * (t.used + 1) > size:
        n = 2 * size if size else 16
        t.slots = <DirectorySlot *>calloc(n, sizeof(DirectorySlot))
        if t.slots is NULL:
            t.slots = old
            raise MemoryError()
        t.mask, t.used = n - 1, 0
        for i in range(size):
            if old[i].number:
                put_slot(t, old[i].hi, old[i].lo, old[i].number - 1)
        free(old)
    i = slot_at(hi, lo, t.mask)
    for n in range(PROBES):
        e = t.slots + i
        if not e.number:
            e.hi, e.lo, e.number = hi, lo, number + 1
            t.used += 1
            return 0
        i = (i + 1) & t.mask
    return 0


cdef Py_ssize_t _slot_offset(cls, name) except -1:
    """The offset of the slot ``name`` in instances of ``cls`` (a member descriptor of its own)."""
    cdef Py_ssize_t off = ml_member_offset(cls.__dict__.get(name))
    if off <= 0:
        raise ImportError(f"{cls.__name__}.{name} is not a slot the compiled step can read")
    return off


cdef inline object _slot(object o, Py_ssize_t off):
    """A slot's value, at its offset (an unset slot raises, as its attribute would)."""
    cdef PyObject *v = (<PyObject **>(<char *><PyObject *>o + off))[0]
    if v is NULL:
        _unset(o)
    return <object>v


cdef extern from *:
    object PyObject_GenericGetDict(object o, void *context)


cdef inline object _image_field(object image, Py_ssize_t off, str name):
    """``image.name``: at its slot (``off``) where MetadataImage has one, else from the instance dictionary where it
    is there (a dataclass without slots), else ``getattr``."""
    cdef PyObject *found
    if off > 0 and type(image) is MetadataImage:
        return ml_field(image, off, name)
    if Py_TYPE(image).tp_dictoffset:
        found = PyDict_GetItemWithError(<dict>PyObject_GenericGetDict(image, NULL), name)
        if found is not NULL:
            return <object>found
    return getattr(image, name)


cdef int _unset(object o) except -1:
    raise AttributeError(f"{type(o).__name__} has a field unset")


# the fields of a delta the step reads, at their slots, and a partition's, at their indexes
cdef Py_ssize_t D_IMAGE = _slot_offset(MetadataDelta, "image")
cdef Py_ssize_t D_METADATA_VERSION = _slot_offset(MetadataDelta, "metadata_version")
cdef Py_ssize_t D_ZK_MIGRATION_STATE = _slot_offset(MetadataDelta, "zk_migration_state")
cdef Py_ssize_t D_DELETED_TOPICS = _slot_offset(MetadataDelta, "deleted_topics")
cdef Py_ssize_t D_TOPICS = _slot_offset(MetadataDelta, "topics")
cdef Py_ssize_t D_BROKERS = _slot_offset(MetadataDelta, "brokers")
cdef Py_ssize_t T_BASE = _slot_offset(TopicDelta, "base")
cdef Py_ssize_t T_BASE_PARTITIONS = _slot_offset(TopicDelta, "base_partitions")
cdef Py_ssize_t T_PARTITIONS = _slot_offset(TopicDelta, "partitions")
# the image's fields the step reads, at their slots where MetadataImage has slots (0: it has none)
cdef Py_ssize_t I_TOPICS = max(ml_member_offset(MetadataImage.__dict__.get("topics")), 0)
cdef Py_ssize_t I_BROKERS = max(ml_member_offset(MetadataImage.__dict__.get("brokers")), 0)
cdef Py_ssize_t P_REPLICAS = PartitionRegistration._fields.index("replicas")
cdef Py_ssize_t P_DIRECTORIES = PartitionRegistration._fields.index("directories")
cdef Py_ssize_t P_LEADER = PartitionRegistration._fields.index("leader")


cdef inline tuple _registration(object part):
    """A PartitionRegistration (a tuple: its fields read at their indexes)."""
    if not PyTuple_Check(part) or PyTuple_GET_SIZE(part) <= P_LEADER:
        _not_registration(part)
    return <tuple>part


cdef int _not_registration(object part) except -1:
    raise TypeError(f"a partition's registration is a {type(part).__name__}")


cdef inline int codes_differ(int64_t *a, int64_t *b, int n):
    cdef int i
    for i in range(n):
        if a[i] != b[i]:
            return 1
    return 0


cdef class ClusterStep:
    """``metalog.analysis.domain.step.ClusterStep``, compiled (see the module's docstring); its attributes are declared
    in ``step.pxd``."""

    def __init__(self, str cluster, image, image_of, *, bint log_start=True):
        cdef Py_ssize_t b, p
        self.cluster = cluster
        self.image_of = image_of
        self.timeline.width, self.brokers_rows.width, self.dir_rows.width = TIMELINE_WIDTH, BROKER_WIDTH, \
            DIRECTORY_WIDTH
        self.bnum, self.bid, self.reg = {}, [], []
        self.dnum, self.dirs, self.dname = {}, [], []
        self.failed, self.events, self.lost, self.told, self.added = [], [], [], [], []
        for d in (MIGRATING, UNASSIGNED, LOST):
            self._directory(d)
        self._zero_counts()
        self._count(image)
        self.has_prev = False
        if log_start:
            for b in range(len(self.bid)):
                self._dirty_broker(b)
            for p in range(self.pb.size):
                self._dirty_pair(p)
        else:
            self._codes(self.prev)
            self.has_prev = True
            for b in range(len(self.bid)):
                self._broker_values(b, self.bshown.data + b * BROKER_VALUES)
            for p in range(self.pb.size):
                if self.pd.data[p] > LOST_DIR:
                    self._pair_values(p, self.pshown.data + p * PAIR_VALUES)

    def __dealloc__(self):
        free(self.bids.data)
        free(self.bslot.data)
        free(self.dslots.slots)
        free(self.breg.data)
        free(self.bkind.data)
        free(self.blead.data)
        free(self.boff.data)
        free(self.bshown.data)
        free(self.bdirty.data)
        free(self.bfirst.data)
        free(self.dirty_b.data)
        free(self.pb.data)
        free(self.pd.data)
        free(self.pnext.data)
        free(self.prep.data)
        free(self.plead.data)
        free(self.pless.data)
        free(self.plisted.data)
        free(self.poffline.data)
        free(self.pshown.data)
        free(self.pdirty.data)
        free(self.dirty_p.data)
        free(self.timeline.data)
        free(self.brokers_rows.data)
        free(self.dir_rows.data)

    # ---- numbering ----------------------------------------------------------------------------------------------
    cdef Py_ssize_t _broker(self, object bid) except -1:
        """Broker ``bid``'s number: through ``bslot`` for an int id in [0, BROKER_SLOTS), else ``bnum``."""
        cdef long long v = -1
        cdef int overflow = 0
        cdef Py_ssize_t b
        if PyLong_CheckExact(bid):
            v = PyLong_AsLongLongAndOverflow(bid, &overflow)
            if 0 <= v < self.bslot.size:
                b = self.bslot.data[v]
                if b:
                    return b - 1
        b = self._number_broker(bid)
        if not overflow and 0 <= v < BROKER_SLOTS:
            if v >= self.bslot.size:
                grow(&self.bslot, v + 1 - self.bslot.size)
                self.bslot.size = self.bslot.cap
            self.bslot.data[v] = b + 1
        return b

    cdef Py_ssize_t _number_broker(self, object bid) except -1:
        cdef PyObject *found = PyDict_GetItemWithError(self.bnum, bid)
        cdef Py_ssize_t b
        if found is not NULL:
            return <Py_ssize_t><object>found
        b = len(self.bid)
        self.bnum[bid] = b
        self.bid.append(bid)
        self.reg.append(None)
        push(&self.bids, 1)[0] = bid
        push(&self.breg, BROKER_REG)
        push(&self.bkind, 4)
        push(&self.blead, 1)
        push(&self.boff, 1)
        push(&self.bshown, BROKER_VALUES)
        push(&self.bdirty, 1)
        push(&self.bfirst, 1)[0] = -1
        return b

    cdef Py_ssize_t _directory(self, object directory) except -1:
        """Directory ``directory``'s number: through ``dslots`` for an id of 16 bytes (a Uuid), else ``dnum``."""
        cdef uint64_t hi, lo
        cdef Py_ssize_t d
        if PyBytes_Check(directory) and PyBytes_GET_SIZE(directory) == 16:
            memcpy(&hi, PyBytes_AS_STRING(directory), 8)
            memcpy(&lo, PyBytes_AS_STRING(directory) + 8, 8)
            d = slot_number(&self.dslots, hi, lo)
            if d >= 0:
                return d
            d = self._number_directory(directory)
            put_slot(&self.dslots, hi, lo, d)
            return d
        return self._number_directory(directory)

    cdef Py_ssize_t _number_directory(self, object directory) except -1:
        cdef PyObject *found = PyDict_GetItemWithError(self.dnum, directory)
        cdef Py_ssize_t d
        if found is not NULL:
            return <Py_ssize_t><object>found
        d = len(self.dirs)
        self.dnum[directory] = d
        self.dirs.append(directory)
        self.dname.append(str(directory))
        return d

    cdef Py_ssize_t _pair(self, Py_ssize_t b, Py_ssize_t d) except -1:
        """The pair's number (a broker's pairs are few: a list through ``pnext``, from ``bfirst``)."""
        cdef Py_ssize_t p = self.bfirst.data[b]
        while p >= 0:
            if self.pd.data[p] == d:
                return p
            p = self.pnext.data[p]
        p = self.pb.size
        push(&self.pb, 1)[0] = b
        push(&self.pd, 1)[0] = d
        push(&self.pnext, 1)[0] = self.bfirst.data[b]
        self.bfirst.data[b] = p
        push(&self.prep, 1)
        push(&self.plead, 1)
        push(&self.pless, 1)
        push(&self.plisted, 1)
        push(&self.poffline, 1)
        push(&self.pshown, PAIR_VALUES)
        push(&self.pdirty, 1)
        self._pair_flags(p, self.reg[b])
        return p

    cdef int _pair_flags(self, Py_ssize_t p, object reg) except -1:
        """What the pair's broker's registration ``reg`` says of its directory: listed, offline."""
        cdef Py_ssize_t d = self.pd.data[p]
        self.plisted.data[p] = reg is not None and self.dirs[d] in reg.directories
        self.poffline.data[p] = self._offline(reg, d)
        return 0

    cdef int _set_reg(self, Py_ssize_t b, object reg) except -1:
        """Broker ``b``'s registration is ``reg`` (None: none): what the step reads of it, read once."""
        cdef int64_t *values = self.breg.data + b * BROKER_REG
        cdef Py_ssize_t p = self.bfirst.data[b]
        self.reg[b] = reg
        if reg is None:
            values[0] = values[1] = values[2] = values[3] = 0
        else:
            values[0] = FENCED if reg.fenced else UNFENCED
            values[1], values[2] = <bint>reg.in_controlled_shutdown, <bint>reg.is_migrating_zk_broker
            values[3] = len(reg.directories)
        while p >= 0:
            self._pair_flags(p, reg)
            p = self.pnext.data[p]
        return 0

    cdef inline int _dirty_broker(self, Py_ssize_t b) except -1:
        if not self.bdirty.data[b]:
            self.bdirty.data[b] = 1
            push(&self.dirty_b, 1)[0] = b
        return 0

    cdef inline int _dirty_pair(self, Py_ssize_t p) except -1:
        if not self.pdirty.data[p]:
            self.pdirty.data[p] = 1
            push(&self.dirty_p, 1)[0] = p
        return 0

    # ---- the counts ---------------------------------------------------------------------------------------------
    cdef int _zero_counts(self) except -1:
        cdef Py_ssize_t i
        self.mv = self.zk = self.topics = self.partitions = self.offline_partitions = self.imbalance = 0
        self.offline = self.fenced = self.registered = self.shutdown = self.brokers_zk = self.with_dirs = 0
        for i in range(4):
            self.kinds[i] = 0
        _zero(&self.bkind)
        _zero(&self.blead)
        _zero(&self.boff)
        _zero(&self.prep)
        _zero(&self.plead)
        _zero(&self.pless)
        for i in range(len(self.reg)):
            self._set_reg(i, None)
        return 0

    cdef int _count(self, object image) except -1:
        features = image.features
        self.mv = features.metadata_version or 0
        self.zk = features.zk_migration_state
        for bid, reg in image.brokers.items():
            self._broker_change(bid, None, reg)
        self.topics = len(image.topics)
        for topic in image.topics.values():
            for part in (<dict>topic.partitions).values():
                self._partition(_registration(part), 1)
        return 0

    @property
    def published(self):
        """``MetadataLoader.on_publish`` of a loader with ``images=False`` (``Published``: callable from Python as
        ``published(delta, image)``, and in C by the loader's compiled publish)."""
        return Published(self)

    cdef int on_delta(self, object delta, object image) except -1:
        """``published(delta, image)``: the delta's fields read at their slots (``MetadataDelta``'s, ``TopicDelta``'s),
        a partition's at its index (``PartitionRegistration``'s)."""
        cdef list added
        if delta is None:
            return self._replace(image)
        if type(delta) is not MetadataDelta:
            raise TypeError(f"a {type(delta).__name__} published, not a MetadataDelta")
        before = _slot(delta, D_IMAGE)
        self.mv = _slot(delta, D_METADATA_VERSION) or 0
        self.zk = _slot(delta, D_ZK_MIGRATION_STATE)
        deleted = <set?>_slot(delta, D_DELETED_TOPICS)
        topics = <dict?>_slot(delta, D_TOPICS)
        added = self.added
        if added:  # (left by a delta that failed)
            del added[:]
        if deleted or topics:
            old_topics = <dict?>_image_field(before, I_TOPICS, "topics")
            if deleted:
                for tid in deleted:
                    gone = old_topics.get(tid)
                    if gone is not None:
                        self.topics -= 1
                        for part in (<dict?>gone.partitions).values():
                            self._partition(_registration(part), -1)
            self._changed_topics(topics, old_topics, added)
        brokers = <dict?>_slot(delta, D_BROKERS)
        if brokers:
            self._changed_brokers(brokers, <dict?>_image_field(before, I_BROKERS, "brokers"))
        if added:
            for part in added:  # after the brokers: a partition counts against the brokers as they are now
                self._partition(_registration(part), 1)
            del added[:]  # (not held from one delta to the next)
        return 0

    cdef int _changed_topics(self, dict topics, dict old_topics, list added) except -1:
        """``ClusterStep._changed_topics``: each changed partition out of the counts as it was, unless only its ISR
        or its leader among the same replicas moved; ``added`` the partitions to count as they are now."""
        cdef Py_ssize_t pos = 0, at
        cdef PyObject *key
        cdef PyObject *value
        cdef PyObject *found
        cdef dict base, changed
        cdef tuple old, new
        while PyDict_Next(topics, &pos, &key, &value):
            topic = <object>value
            if type(topic) is not TopicDelta:
                raise TypeError(f"a topic's delta is a {type(topic).__name__}")
            changed = <dict?>_slot(topic, T_PARTITIONS)
            if _slot(topic, T_BASE) is None:  # new, or removed and created again
                gone = old_topics.get(<object>key)
                if gone is None:
                    self.topics += 1
                else:
                    for part in (<dict?>gone.partitions).values():
                        self._partition(_registration(part), -1)
                added.extend(changed.values())
                continue
            base = <dict?>_slot(topic, T_BASE_PARTITIONS)
            at = 0
            while PyDict_Next(changed, &at, &key, &value):
                new = _registration(<object>value)
                found = PyDict_GetItemWithError(base, <object>key)
                if found is not NULL:
                    old = _registration(<object>found)
                    if _same(old[P_LEADER], new[P_LEADER]) and _same(old[P_REPLICAS], new[P_REPLICAS]) \
                            and _same(old[P_DIRECTORIES], new[P_DIRECTORIES]):
                        continue  # an ISR change: the same counts
                    if self._leader_moved(old, new):
                        continue
                    self._partition(old, -1)
                added.append(new)
        return 0

    cdef int _changed_brokers(self, dict brokers, dict old_brokers) except -1:
        cdef Py_ssize_t pos = 0
        cdef PyObject *key
        cdef PyObject *value
        cdef PyObject *found
        while PyDict_Next(brokers, &pos, &key, &value):
            found = PyDict_GetItemWithError(old_brokers, <object>key)
            old = None if found is NULL else <object>found
            if old is not <object>value:
                self._broker_change(<object>key, old, <object>value)
        return 0

    cdef bint _leader_moved(self, tuple old, tuple new) except -1:
        """A new leader among the same replicas in the same directories, neither leader nor leaderless changing
        to the other: only the two leaders' counts and the imbalance move (most leader changes)."""
        cdef int64_t was = old[P_LEADER]
        cdef int64_t now = new[P_LEADER]
        cdef tuple replicas, directories
        cdef Py_ssize_t i, n, b, p
        cdef int64_t r, preferred
        if was == NO_LEADER or now == NO_LEADER:
            return False
        if not (_same(old[P_REPLICAS], new[P_REPLICAS]) and _same(old[P_DIRECTORIES], new[P_DIRECTORIES])):
            return False
        replicas = <tuple?>new[P_REPLICAS]
        directories = <tuple?>new[P_DIRECTORIES]
        n = len(replicas)
        if len(directories) != n:
            return False
        preferred = replicas[0] if n else NO_LEADER
        self.imbalance += (now != preferred) - (was != preferred)
        for i in range(n):
            r = replicas[i]
            if r != was and r != now:
                continue
            b = self._broker(replicas[i])
            p = self._pair(b, self._directory(directories[i]))
            if r == was:
                self.plead.data[p] -= 1
                self.blead.data[b] -= 1
            if r == now:
                self.plead.data[p] += 1
                self.blead.data[b] += 1
            self._dirty_broker(b)
            self._dirty_pair(p)
        return True

    cdef int _replace(self, object image) except -1:
        cdef Py_ssize_t b, p
        brokers = image.brokers
        for b in range(len(self.bid)):
            reg = self.reg[b]
            new = brokers.get(self.bid[b])
            if reg is not None and new is not None:
                self._lost_directories(reg, new)
        self._zero_counts()
        self._count(image)
        for b in range(len(self.bid)):
            self._dirty_broker(b)
        for p in range(self.pb.size):
            self._dirty_pair(p)
        return 0

    cdef bint _offline(self, object reg, Py_ssize_t d) except -1:
        """``ClusterStep._offline``, from the registration (``_pair_flags`` keeps it per pair)."""
        if reg is None or reg.fenced:
            return True
        if d < LOST_DIR:
            return False
        if d == LOST_DIR:
            return True
        dirs = reg.directories
        return bool(dirs) and self.dirs[d] not in dirs

    cdef int _partition(self, tuple part, int sign) except -1:
        cdef tuple replicas = <tuple?>part[P_REPLICAS]
        cdef tuple directories = <tuple?>part[P_DIRECTORIES]
        cdef int64_t leader = part[P_LEADER]
        cdef Py_ssize_t n = len(replicas), i, b, d, p, kind
        cdef bint leaderless = leader == NO_LEADER
        cdef int64_t preferred = replicas[0] if n else NO_LEADER
        if len(directories) != n:
            raise ValueError("a partition with as many directories as replicas expected")
        self.partitions += sign
        if leaderless:
            self.offline_partitions += sign
        if leader != preferred:
            self.imbalance += sign
        for i in range(n):
            b = self._broker(replicas[i])
            d = self._directory(directories[i])
            p = self._pair(b, d)
            kind = d if d < ASSIGNED else ASSIGNED
            self.prep.data[p] += sign
            self.bkind.data[4 * b + kind] += sign
            self.kinds[kind] += sign
            if self.bids.data[b] == leader:
                self.plead.data[p] += sign
                self.blead.data[b] += sign
            if leaderless:
                self.pless.data[p] += sign
            if self.poffline.data[p]:
                self.boff.data[b] += sign
                self.offline += sign
            self._dirty_broker(b)
            self._dirty_pair(p)
        return 0

    cdef int _broker_change(self, object bid, object old, object new) except -1:
        cdef Py_ssize_t b = self._broker(bid), p
        cdef int sign
        cdef int64_t offline = 0
        for reg, sign in ((old, -1), (new, 1)):
            if reg is not None:
                self.registered += sign
                self.fenced += sign * <bint>reg.fenced
                self.shutdown += sign * <bint>reg.in_controlled_shutdown
                self.brokers_zk += sign * <bint>reg.is_migrating_zk_broker
                self.with_dirs += sign * <bint>bool(reg.directories)
                for directory in reg.directories:
                    self._pair(b, self._directory(directory))
        self._set_reg(b, new)
        p = self.bfirst.data[b]
        while p >= 0:
            if self.poffline.data[p]:
                offline += self.prep.data[p]
            self._dirty_pair(p)
            p = self.pnext.data[p]
        self.offline += offline - self.boff.data[b]
        self.boff.data[b] = offline
        self._dirty_broker(b)
        if old is not None and new is not None:
            self._lost_directories(old, new)
        return 0

    cdef int _lost_directories(self, object old, object new) except -1:
        if old is not new and old.epoch == new.epoch:
            now = new.directories
            for d in old.directories:
                if d not in now:
                    self.lost.append((new.id, d))
        return 0

    # ---- events told as they come -------------------------------------------------------------------------------
    def aborted(self, abort):
        """``MetadataLoader.on_abort``."""
        self.told.append((abort.abort_offset, ABORTED, f"transaction begun at offset {abort.begin_offset} aborted"))

    def leader_change(self, offset, leader_id, epoch):
        self.on_leader_change(offset, leader_id, epoch)

    cdef int on_leader_change(self, int64_t offset, object leader_id, object epoch) except -1:
        self.told.append((offset, CONTROLLER_LEADER, f"controller {leader_id} leads in epoch {epoch}"))
        return 0

    # ---- rows ---------------------------------------------------------------------------------------------------
    cdef inline void _codes(self, int64_t *out) noexcept:
        out[0] = self.mv
        out[1] = _phase(self.zk, self.brokers_zk)
        out[2] = _transition(self.with_dirs, self.registered, self.kinds[0], self.kinds[1])

    def batch(self, int64_t last_offset, int64_t timestamp, bint open_transaction):
        self.on_batch(last_offset, timestamp, open_transaction)

    cdef int on_batch(self, int64_t last_offset, int64_t timestamp, bint open_transaction) except -1:
        cdef int64_t codes[3]
        cdef int64_t *prev
        cdef int64_t start[3]
        cdef Rows *t = &self.timeline
        cdef Py_ssize_t s
        cdef int64_t *at
        self._codes(codes)
        if t.size == t.cap:
            more_rows(t)
        s, at = t.stride, t.data + t.size  # the row's values stored in their columns, each ``s`` (the stride) on
        at[0], at[s], at[2 * s], at[3 * s], at[4 * s] = last_offset, timestamp, codes[0], self.zk, codes[1]
        at[5 * s], at[6 * s], at[7 * s] = codes[2], self.fenced, self.registered - self.fenced
        at[8 * s], at[9 * s], at[10 * s], at[11 * s] = self.shutdown, self.brokers_zk, self.topics, self.partitions
        at[12 * s], at[13 * s], at[14 * s] = self.offline_partitions, self.imbalance, self.kinds[0]
        at[15 * s], at[16 * s], at[17 * s] = self.kinds[1], self.kinds[2], self.kinds[3]
        at[18 * s], at[19 * s] = self.offline, open_transaction
        t.size += 1
        if self.told:
            for offset, kind, detail in self.told:
                self.events.append((offset, timestamp, kind, detail))
            self.told = []
        if self.lost:
            self._failures(last_offset, timestamp)
        if self.has_prev:
            prev = self.prev
        else:
            start[0], start[1], start[2] = 0, PHASE_NATIVE, NOT_STARTED
            prev = start
        if codes_differ(codes, prev, 3):
            if prev[0] != codes[0]:
                names = version_names(array("q", [prev[0], codes[0]]))
                self.events.append((last_offset, timestamp, METADATA_VERSION,
                                    f"{names[prev[0]] or 'unset'} -> {names[codes[0]] or 'unset'}"))
            if prev[1] != codes[1]:
                self.events.append((last_offset, timestamp, PHASE_CHANGE, f"{PHASES[prev[1]]} -> {PHASES[codes[1]]}"))
            if prev[2] != codes[2]:
                self.events.append((last_offset, timestamp, DIR_TRANSITION,
                                    f"{DIR_TRANSITIONS[prev[2]]} -> {DIR_TRANSITIONS[codes[2]]}"))
        self.prev[0], self.prev[1], self.prev[2] = codes[0], codes[1], codes[2]
        self.has_prev = True
        if self.dirty_b.size or self.dirty_p.size:
            self._changed_rows(last_offset, timestamp)
        return 0

    cdef int _failures(self, int64_t last_offset, int64_t timestamp) except -1:
        image = self.image_of()
        for bid, directory in self.lost:
            self.events.append((last_offset, timestamp, DIRECTORY_FAILURE, f"broker {bid} lost directory {directory}"))
            found = sorted((topic.name, pid, part.leader) for topic in image.topics.values()
                           for pid, part in topic.partitions.items()
                           if bid in part.replicas and part.directory(bid) == directory)
            d = self._directory(directory)
            for topic_name, pid, leader in found or [("", -1, NO_LEADER)]:
                self.failed.append((last_offset, timestamp, bid, d, topic_name, pid, leader))
        self.lost = []
        return 0

    cdef int _broker_values(self, Py_ssize_t b, int64_t *out) except -1:
        cdef int i
        for i in range(BROKER_REG):
            out[i] = self.breg.data[b * BROKER_REG + i]
        for i in range(4):
            out[4 + i] = self.bkind.data[4 * b + i]
        out[8], out[9] = self.boff.data[b], self.blead.data[b]
        return 0

    cdef int _pair_values(self, Py_ssize_t p, int64_t *out) except -1:
        cdef int64_t replicas = self.prep.data[p]
        cdef int64_t *reg = self.breg.data + self.pb.data[p] * BROKER_REG  # (state, ..., directories listed)
        cdef bint listed = self.plisted.data[p]
        if not replicas and not listed:
            out[0] = out[1] = out[2] = out[3] = out[4] = 0
            return 0
        out[0] = listed or (reg[0] != UNREGISTERED and not reg[3])
        out[1], out[2], out[4] = replicas, self.plead.data[p], self.pless.data[p]
        out[3] = replicas if self.poffline.data[p] else 0
        return 0

    cdef bint _before(self, int64_t x, int64_t y, bint pairs) except -1:
        """Broker ``x`` before broker ``y`` by id; with ``pairs``, pair ``x`` before pair ``y`` by (broker id,
        directory id's text)."""
        if not pairs:
            return self.bids.data[x] < self.bids.data[y]
        cdef int64_t a = self.bids.data[self.pb.data[x]], b = self.bids.data[self.pb.data[y]]
        if a != b:
            return a < b
        return <str>self.dname[self.pd.data[x]] < <str>self.dname[self.pd.data[y]]

    cdef int _sort(self, Buffer *items, bint pairs) except -1:
        """``items`` in ``_before``'s order (an insertion sort while few, as a batch's are, else a merge sort)."""
        cdef Py_ssize_t n = items.size, i, j, width, lo, mid, hi, a, b, k
        cdef int64_t *v = items.data
        cdef int64_t *tmp
        cdef int64_t x
        if n <= 16:
            for i in range(1, n):
                x = v[i]
                j = i
                while j > 0 and self._before(x, v[j - 1], pairs):
                    v[j] = v[j - 1]
                    j -= 1
                v[j] = x
            return 0
        tmp = <int64_t *>malloc(n * sizeof(int64_t))
        if tmp is NULL:
            raise MemoryError()
        try:
            width = 1
            while width < n:
                lo = 0
                while lo < n:
                    mid, hi = min(lo + width, n), min(lo + 2 * width, n)
                    a, b, k = lo, mid, lo
                    while k < hi:
                        if b >= hi or (a < mid and not self._before(v[b], v[a], pairs)):
                            tmp[k] = v[a]
                            a += 1
                        else:
                            tmp[k] = v[b]
                            b += 1
                        k += 1
                    lo = hi
                memcpy(v, tmp, n * sizeof(int64_t))
                width *= 2
        finally:
            free(tmp)
        return 0

    cdef int _changed_rows(self, int64_t last_offset, int64_t timestamp) except -1:
        """``ClusterStep._changed_rows``, in C: a row for each broker and each real directory whose values changed,
        by broker id (then directory id)."""
        cdef int64_t values[BROKER_VALUES]
        cdef int64_t *shown
        cdef int64_t row[BROKER_WIDTH]
        cdef Py_ssize_t i, j, b, p
        self._sort(&self.dirty_b, False)
        for i in range(self.dirty_b.size):
            b = self.dirty_b.data[i]
            self.bdirty.data[b] = 0
            self._broker_values(b, values)
            shown = self.bshown.data + b * BROKER_VALUES
            if codes_differ(values, shown, BROKER_VALUES):
                row[0], row[1], row[2] = last_offset, timestamp, self.bids.data[b]
                for j in range(BROKER_VALUES):
                    row[3 + j] = shown[j] = values[j]
                put_row(&self.brokers_rows, row)
        self.dirty_b.size = 0
        j = 0
        for i in range(self.dirty_p.size):  # the real directories' pairs only
            p = self.dirty_p.data[i]
            self.pdirty.data[p] = 0
            if self.pd.data[p] > LOST_DIR:
                self.dirty_p.data[j] = p
                j += 1
        self.dirty_p.size = j
        self._sort(&self.dirty_p, True)
        for i in range(self.dirty_p.size):
            p = self.dirty_p.data[i]
            self._pair_values(p, values)
            shown = self.pshown.data + p * PAIR_VALUES
            if codes_differ(values, shown, PAIR_VALUES):
                row[0], row[1], row[2], row[3] = last_offset, timestamp, self.bids.data[self.pb.data[p]], self.pd.data[p]
                for j in range(PAIR_VALUES):
                    row[4 + j] = shown[j] = values[j]
                put_row(&self.dir_rows, row)
        self.dirty_p.size = 0
        return 0

    # ---- handing the rows over ----------------------------------------------------------------------------------
    @property
    def pending(self):
        return self.timeline.size

    def take(self):
        cluster = self.cluster
        timeline = _columns(&self.timeline)
        timeline[2:6] = [Coded(timeline[2], version_names(_highest(timeline[2]))), Coded(timeline[3], ZK_NAMES),
                         Coded(timeline[4], PHASES), Coded(timeline[5], DIR_TRANSITIONS)]
        brokers = _columns(&self.brokers_rows)
        brokers[3] = Coded(brokers[3], BROKER_STATES)
        directories = _columns(&self.dir_rows)
        directories[3] = Coded(directories[3], self.dname)
        events = _rows_columns(self.events, (False, False, True, None))
        events[2] = Coded(events[2], EVENT_KINDS)
        failed = _rows_columns(self.failed, (False, False, False, True, None, False, False))
        failed[3] = Coded(failed[3], self.dname)
        self.events, self.failed = [], []
        return {
            TIMELINE.name: Chunk(TIMELINE, cluster, tuple(timeline)),
            EVENTS.name: Chunk(EVENTS, cluster, tuple(events)),
            BROKERS.name: Chunk(BROKERS, cluster, tuple(brokers)),
            DIRECTORIES.name: Chunk(DIRECTORIES, cluster, tuple(directories)),
            FAILURES.name: Chunk(FAILURES, cluster, tuple(failed)),
        }


cdef class Published:
    """A compiled step's ``published``: ``MetadataLoader.on_publish``, callable from Python as ``(delta, image)``,
    and carrying ``c_on_publish`` (``publish.pxd``'s ``ml_on_publish``), through which the loader's compiled publish
    tells the step in C."""

    def __init__(self, ClusterStep step not None):
        self.step = step

    def __call__(self, delta, image):
        self.step.on_delta(delta, image)

    @property
    def c_on_publish(self):
        return ON_PUBLISH_CAPSULE


cdef int _on_publish(object subscriber, object delta, object image) except -1:
    return (<Published>subscriber).step.on_delta(delta, image)


cdef ml_on_publish ON_PUBLISH
ON_PUBLISH.published = _on_publish
ON_PUBLISH_CAPSULE = PyCapsule_New(&ON_PUBLISH, ML_ON_PUBLISH_NAME, NULL)


cdef inline bint _same(object a, object b) except -1:
    return a is b or a == b


cdef inline void _zero(Buffer *b):
    memset(b.data, 0, b.size * sizeof(int64_t))


cdef inline int64_t _phase(int64_t zk_state, int64_t brokers_zk):
    if zk_state == 2:
        return PHASE_PRE
    if zk_state == 1:
        return PHASE_HYBRID if brokers_zk else PHASE_DUAL
    if zk_state == 3:
        return PHASE_POST
    return PHASE_NATIVE


cdef inline int64_t _transition(int64_t with_dirs, int64_t registered, int64_t migrating, int64_t unassigned):
    if not with_dirs:
        return NOT_STARTED
    if with_dirs == registered and not migrating and not unassigned:
        return COMPLETE
    return IN_PROGRESS


cdef array INT64 = array("q")


cdef list _columns(Rows *rows):
    """The rows' columns, each copied whole into an ``array('q')``; the rows emptied (their block kept)."""
    cdef Py_ssize_t n = rows.size, j
    cdef list out = []
    cdef array column
    for j in range(rows.width):
        column = clone(INT64, n, False)
        memcpy(column.data.as_voidptr, rows.data + j * rows.stride, n * sizeof(int64_t))
        out.append(column)
    rows.size = 0
    return out


cdef array _highest(array codes):
    """``codes``' highest as a one-value array, for ``version_names`` (which takes the highest of what it is given):
    found in C, where the column has a row per batch."""
    cdef Py_ssize_t i, n = len(codes)
    cdef int64_t *v = <int64_t *>codes.data.as_voidptr
    cdef int64_t high = v[0] if n else 0
    for i in range(1, n):
        if v[i] > high:
            high = v[i]
    return array("q", [high])


cdef list _rows_columns(list rows, tuple kinds):
    """Python rows as columns: ``kinds`` per column False (int64), True (codes), None (text)."""
    cdef list out = []
    cdef Py_ssize_t j
    for j, kind in enumerate(kinds):
        values = [row[j] for row in rows]
        out.append(values if kind is None else array("q", values))
    return out
