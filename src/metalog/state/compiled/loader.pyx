# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``MetadataLoader.replay_value``, replay's per-record dispatch: hand-written.

A ``ValueReplay`` is a loader's ``replay_value``: it looks the value's reader and rule up by its apiKey and version
bytes, decodes it with the (compiled) reader and calls the rule, as the pure method does. Anything else (a value
not exactly one record in the usual frame, a type or version the table lacks, bytes the reader refuses) goes to
the pure method, which reads the rare forms or raises its own error. A record is read through its compiled
reader's C entry point (``metalog.codec.compiled._reader``'s ``read_entry``: no bytes object, no Python call) where
the codec gives one, through the reader's Python entry otherwise. What it needs comes in one object,
``metalog.state.value_replay.ValueReplayParts``: no constant, field position or private name is copied here. It
also offers the log's compiled read loop (``metalog.log.compiled.scan``) a C entry point, ``c_value_sink``, which
takes a value as a pointer and a length.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.pycapsule cimport PyCapsule_New
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_SET_ITEM
from libc.stdint cimport int64_t
from libc.string cimport memcmp

from metalog.codec.compiled._reader cimport METALOG_CYTHON_VERSION, ReadFn, entry_fn, ml_member_offset, read_entry

from metalog.codec.compiled.sinks cimport ml_value_sink

cdef extern from *:
    """
    /* A new instance of a tuple subclass (a NamedTuple) of n items, to be set with PyTuple_SET_ITEM. */
    static PyObject *ml_new_tuple_of(PyObject *cls, Py_ssize_t n) {
        return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, n);
    }
    /* A slot's value (borrowed; NULL when unset), at an offset read from the class's member descriptor. */
    static inline PyObject *ml_slot(PyObject *o, Py_ssize_t off) { return *(PyObject **)((char *)o + off); }
    """
    object ml_new_tuple_of(object cls, Py_ssize_t n)
    PyObject *ml_slot(object o, Py_ssize_t off)

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()


# PartitionChangeRecord's fields partition_change reads besides its lists (``PartitionChangeParts.lists``), in this
# order (their slots' offsets: ValueReplay.pc_off, the lists' after them)
RECORD_FIELDS = ("replicas", "directories", "leader_recovery_state", "topic_id", "partition_id", "leader")
cdef enum:
    N_RECORD_FIELDS = 6
    N_LISTS = 5  # PartitionChangeParts.lists: checked where bound
    REPLICAS = 0
    DIRECTORIES = 1
    LEADER_RECOVERY_STATE = 2
    TOPIC_ID = 3
    PARTITION_ID = 4
    LEADER = 5


# The dispatch table in C, indexed by apiKey * TABLE_VERSIONS + version: each record type's reader and rule. A
# value whose apiKey or version is past the table goes to the pure method (no metadata record is, today).
cdef enum:
    TABLE_KEYS = 64
    TABLE_VERSIONS = 16
    UNKNOWN = 0  # not in the dispatch table: the pure method
    MARKER = 1  # a transaction marker: loader.load_marker
    RULE = 2  # the rule, called
    PARTITION_CHANGE = 3  # ValueReplay.partition_change


cdef struct Entry:
    int kind
    ReadFn fn  # the compiled reader's C entry point, or NULL: ``reader`` is called
    PyObject *reader  # borrowed: ValueReplay.dispatch holds them
    PyObject *rule


# The slots of the TopicDelta a record of a topic the delta has not touched yet makes, in ``TopicDelta.__slots__``'
# order; ``TopicDelta(name, id, base)`` sets them to name, id, base, base.partitions and a new dict.
TOPIC_DELTA_SLOTS = ("name", "id", "base", "base_partitions", "partitions")


cdef class ValueReplay:
    """``loader.replay_value``, compiled (see the module's docstring): ``ValueReplay(loader, pure, parts)``, where
    ``pure`` is the loader's pure ``replay_value`` (bound) and ``parts`` a ``ValueReplayParts``. It uses the loader's
    public ``delta``, ``offset`` and ``load_marker`` only."""

    cdef dict dispatch
    cdef object loader, pure, noop, misses, located, replay_error, pc_rule, registration, pc_cls, topic_cls
    cdef object no_leader_change, no_recovery_change, recovery_states, migrating
    cdef Py_ssize_t pc_off[N_RECORD_FIELDS + N_LISTS]  # the record's slots: RECORD_FIELDS', then the lists'
    cdef Py_ssize_t list_at[N_LISTS]  # the registration field each list replaces
    cdef Py_ssize_t topic_off[2]
    cdef Py_ssize_t topic_init[3]  # TopicDelta's name, id and base slots
    cdef bint topic_direct
    cdef Py_ssize_t n_fields, leader_at, leader_epoch_at, partition_epoch_at, recovery_at, replicas_at, directories_at
    cdef const unsigned char *noop_p
    cdef Py_ssize_t noop_n
    cdef int frame_version
    cdef Entry table[TABLE_KEYS * TABLE_VERSIONS]
    cdef public object c_value_sink

    def __init__(self, loader, pure, parts):
        self.loader = loader  # the MetadataLoader
        self.pure = pure  # its pure replay_value (bound)
        self.dispatch = <dict?>parts.dispatch  # apiKey << 8 | version -> (reader, rule or None)
        if not all(type(entry) is tuple and len(entry) == 2 for entry in self.dispatch.values()):
            raise TypeError("the dispatch table's entries must be (reader, rule) pairs")
        self.noop = <bytes?>parts.noop
        self.noop_p = <const unsigned char *>PyBytes_AS_STRING(self.noop)
        self.noop_n = PyBytes_GET_SIZE(self.noop)
        self.frame_version = parts.frame_version
        self.misses = parts.misses  # what a reader raises on bytes it does not read
        self.located = parts.located
        self.replay_error = parts.replay_error
        self.bind_partition_change(parts.partition_change)
        self.bind_table(parts.entries)
        self.c_value_sink = PyCapsule_New(&SINK, b"metalog.value_sink.v1", NULL)

    cdef bind_partition_change(self, change):
        """The slots and positions ``partition_change`` reads, found from the definitions ``change`` names."""
        cdef Py_ssize_t i
        self.pc_rule = change.rule  # metalog.state.rules.partition_change, whose common case partition_change() runs
        self.registration, self.pc_cls, self.topic_cls = change.registration, change.record, change.topic_delta
        self.no_leader_change, self.no_recovery_change = change.no_leader_change, change.no_recovery_change
        self.recovery_states, self.migrating = frozenset(change.recovery_states), change.migrating
        fields = tuple(change.registration_fields)
        if len(change.lists) != N_LISTS or fields != tuple(self.registration._fields):
            raise TypeError("the PartitionChangeRecord parts do not match PartitionRegistration")
        for i, name in enumerate(RECORD_FIELDS):
            self.pc_off[i] = _offset(self.pc_cls, name)
        for i, (name, field) in enumerate(change.lists):
            self.pc_off[N_RECORD_FIELDS + i] = _offset(self.pc_cls, name)
            self.list_at[i] = fields.index(field)
        self.n_fields = len(fields)
        self.leader_at = fields.index("leader")
        self.leader_epoch_at = fields.index("leader_epoch")
        self.partition_epoch_at = fields.index("partition_epoch")
        self.recovery_at = fields.index("leader_recovery_state")
        self.replicas_at = fields.index("replicas")
        self.directories_at = fields.index("directories")
        for i, name in enumerate(("partitions", "base_partitions")):
            self.topic_off[i] = _offset(self.topic_cls, name)
        # a topic delta over an image's topic is made here where TopicDelta is the class of these five slots, its
        # __init__ the plain one TOPIC_DELTA_INIT says (tests/state/test_value_replay.py holds the two to each other)
        self.topic_direct = (tuple(self.topic_cls.__slots__) == TOPIC_DELTA_SLOTS
                             and type(self.topic_cls) is type and self.topic_cls.__bases__ == (object,))
        for i, name in enumerate(TOPIC_DELTA_SLOTS[:3]):
            self.topic_init[i] = _offset(self.topic_cls, name) if self.topic_direct else -1

    cdef bind_table(self, entries):
        """The C dispatch table, from ``dispatch`` and the readers' C entry points (``entries``, same keys)."""
        cdef Entry *e
        for key, (reader, rule) in self.dispatch.items():
            if not 0 <= key >> 8 < TABLE_KEYS or not 0 <= key & 0xFF < TABLE_VERSIONS:
                continue  # the pure method reads it
            e = &self.table[(key >> 8) * TABLE_VERSIONS + (key & 0xFF)]
            e.reader, e.rule = <PyObject *>reader, <PyObject *>rule
            e.kind = MARKER if rule is None else PARTITION_CHANGE if rule is self.pc_rule else RULE
            entry = entries.get(key)
            e.fn = NULL if entry is None else entry_fn(entry)

    def __call__(self, value, offset):
        if type(value) is bytes and type(offset) is int:
            self.feed(<const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), offset, value)
        else:
            self.pure(value, offset)

    def replay_values(self, values, Py_ssize_t base):
        """``loader.replay_values``: the values of a batch in order, the first at offset ``base``."""
        cdef Py_ssize_t i
        if type(values) is not list:
            for i, value in enumerate(values):
                self(value, base + i)
            return
        for i in range(len(<list>values)):
            value = (<list>values)[i]
            if type(value) is bytes:
                self.feed(<const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), base + i, value)
            else:
                self.pure(value, base + i)

    cdef int feed(self, const unsigned char *p, Py_ssize_t n, object offset, object value) except -1:
        """The value p[0:n] (``value``, its bytes, or None: made here when needed) at ``offset``."""
        cdef object loader = self.loader
        cdef Entry *e
        cdef Py_ssize_t stop
        if n == self.noop_n and memcmp(p, self.noop_p, n) == 0:  # most of a quiet cluster's log; it changes nothing
            loader.offset = offset
            return 0
        if n < 3 or p[0] != self.frame_version or p[1] >= TABLE_KEYS or p[2] >= TABLE_VERSIONS:
            return self.slow(p, n, offset, value)
        e = &self.table[p[1] * TABLE_VERSIONS + p[2]]
        if e.kind == UNKNOWN:
            return self.slow(p, n, offset, value)
        if e.fn is not NULL:
            record = read_entry(e.fn, p, 3, n, &stop)
            if record is None:  # refused: the pure method reads it or raises
                return self.slow(p, n, offset, value)
        else:
            if value is None:
                value = PyBytes_FromStringAndSize(<const char *>p, n)
            try:
                record, end = (<object>e.reader)(value, 3)
            except self.misses:
                return self.slow(p, n, offset, value)
            stop = end
        if stop != n:
            return self.slow(p, n, offset, value)
        if e.kind == MARKER:
            loader.load_marker(record.NAME, offset)
        else:
            try:
                if e.kind == PARTITION_CHANGE:
                    self.partition_change(loader.delta, record)
                else:
                    (<object>e.rule)(loader.delta, record)
            except self.replay_error as error:
                raise self.located(error, offset, record) from None
        loader.offset = offset
        return 0

    cdef partition_change(self, d, r):
        """``metalog.state.rules.partition_change``, compiled (half of a busy log's records): a change of leader, ISR,
        ELR, leader recovery state, replicas or directories of a known partition, the topic delta made over the
        image's topic where the delta has none yet (``MetadataDelta.topic_delta``). Whatever the rule refuses (an
        unknown topic or partition, directories that do not fit the replicas, an unknown recovery state) and a record
        or topic delta of another class than the ones it knows go to the rule itself, which raises its own error. The
        record's and the topic delta's fields are read straight from their slots, the registration's placed by their
        names (``bind_partition_change``)."""
        cdef PyObject *v
        cdef Py_ssize_t i
        cdef dict partitions
        if type(r) is not self.pc_cls:
            return self.pc_rule(d, r)
        for i in range(N_RECORD_FIELDS + N_LISTS):  # every field set (else the rule raises its own error)
            if ml_slot(r, self.pc_off[i]) is NULL:
                return self.pc_rule(d, r)
        recovery = <object>ml_slot(r, self.pc_off[LEADER_RECOVERY_STATE])
        if recovery != self.no_recovery_change and recovery not in self.recovery_states:
            return self.pc_rule(d, r)
        topic_id = <object>ml_slot(r, self.pc_off[TOPIC_ID])
        topic = (<dict>d.topics).get(topic_id)
        if topic is None:
            topic = self.topic_delta(d, topic_id)
        if type(topic) is not self.topic_cls:
            return self.pc_rule(d, r)
        partitions = <dict>ml_slot(topic, self.topic_off[0])
        pid = <object>ml_slot(r, self.pc_off[PARTITION_ID])
        old = partitions.get(pid)
        if old is None:
            old = (<dict>ml_slot(topic, self.topic_off[1])).get(pid)
            if old is None:
                return self.pc_rule(d, r)  # raises the rule's own error
        if type(old) is not self.registration or PyTuple_GET_SIZE(old) != self.n_fields:
            return self.pc_rule(d, r)
        new = ml_new_tuple_of(self.registration, self.n_fields)
        for i in range(self.n_fields):
            _set_item(new, i, <object>PyTuple_GET_ITEM(old, i))
        if (ml_slot(r, self.pc_off[REPLICAS]) is not <PyObject *>None
                or ml_slot(r, self.pc_off[DIRECTORIES]) is not <PyObject *>None):
            if not self.change_replicas(new, r):
                return self.pc_rule(d, r)  # (new, never stored, goes)
        for i in range(N_LISTS):
            v = ml_slot(r, self.pc_off[N_RECORD_FIELDS + i])
            if v is not <PyObject *>None:
                _replace_item(new, self.list_at[i], tuple(<object>v))
        leader = <object>ml_slot(r, self.pc_off[LEADER])
        if leader != self.no_leader_change:
            _replace_item(new, self.leader_at, leader)
            _replace_item(new, self.leader_epoch_at, <object>PyTuple_GET_ITEM(old, self.leader_epoch_at) + 1)
        if recovery != self.no_recovery_change:
            _replace_item(new, self.recovery_at, recovery)
        _replace_item(new, self.partition_epoch_at, <object>PyTuple_GET_ITEM(old, self.partition_epoch_at) + 1)
        partitions[pid] = new

    cdef bint change_replicas(self, new, r) except -1:
        """The replicas and directories of ``new`` (a copy of the registration) after a record that carries Replicas
        or Directories, as ``rules._merged_directories`` merges them; False where the rule refuses the record."""
        cdef Py_ssize_t i, n_migrating = 0
        record_replicas = <object>ml_slot(r, self.pc_off[REPLICAS])
        record_directories = <object>ml_slot(r, self.pc_off[DIRECTORIES])
        replicas = <object>PyTuple_GET_ITEM(new, self.replicas_at) if record_replicas is None else tuple(record_replicas)
        if record_directories is None:
            directories = <object>PyTuple_GET_ITEM(new, self.directories_at)
        else:
            if (record_replicas is not None and len(record_directories)
                    and len(record_directories) != len(record_replicas)):
                return False
            directories = tuple(record_directories)
        for i in range(PyTuple_GET_SIZE(directories)):
            if <object>PyTuple_GET_ITEM(directories, i) == self.migrating:
                n_migrating += 1
        if n_migrating == PyTuple_GET_SIZE(directories):  # all MIGRATING (or none)
            directories = (self.migrating,) * len(replicas)
        elif PyTuple_GET_SIZE(directories) != len(replicas):
            return False
        _replace_item(new, self.replicas_at, replicas)
        _replace_item(new, self.directories_at, directories)
        return True

    cdef topic_delta(self, d, topic_id):
        """``d.topic_delta(topic_id)`` for a topic the delta has no delta of yet: one made over the image's topic and
        kept in ``d.topics``; None for a topic deleted in this delta or unknown to the image (the rule raises)."""
        if topic_id in d.deleted_topics:
            return None
        base = d.image.topics.get(topic_id)
        if base is None:
            return None
        if self.topic_direct:  # TopicDelta(base.name, topic_id, base), its slots set here (``bind_partition_change``)
            topic = self.topic_cls.__new__(self.topic_cls)
            _set_slot(topic, self.topic_init[0], base.name)
            _set_slot(topic, self.topic_init[1], topic_id)
            _set_slot(topic, self.topic_init[2], base)
            _set_slot(topic, self.topic_off[1], base.partitions)
            _set_slot(topic, self.topic_off[0], {})
        else:
            topic = self.topic_cls(base.name, topic_id, base)
        (<dict>d.topics)[topic_id] = topic
        return topic

    cdef int slow(self, const unsigned char *p, Py_ssize_t n, object offset, object value) except -1:
        """The pure method: it reads the rare forms, or raises its own error."""
        if value is None:
            value = PyBytes_FromStringAndSize(<const char *>p, n)
        self.pure(value, offset)
        return 0



cdef inline void _set_item(object t, Py_ssize_t i, object item):
    """Item ``i`` of a new tuple set (the tuple takes a reference)."""
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)


cdef inline void _set_slot(object o, Py_ssize_t off, object value):
    """The unset slot at ``off`` of a new object set to ``value`` (it takes a reference)."""
    Py_INCREF(value)
    (<PyObject **>(<char *><PyObject *>o + off))[0] = <PyObject *>value


cdef inline void _replace_item(object t, Py_ssize_t i, object item):
    """Item ``i`` of a tuple this code alone holds replaced (the old one released)."""
    cdef PyObject *gone = PyTuple_GET_ITEM(t, i)
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)
    Py_XDECREF(gone)


cdef Py_ssize_t _offset(cls, name) except -1:
    """The offset of the slot ``name`` in instances of ``cls`` (a member descriptor of its own)."""
    cdef Py_ssize_t off = ml_member_offset(cls.__dict__.get(name))
    if off <= 0:
        raise TypeError(f"{cls.__name__}.{name} is not a slot")
    return off


cdef int _feed(object sink, const unsigned char *p, Py_ssize_t n, int64_t offset) except -1:
    return (<ValueReplay>sink).feed(p, n, offset, None)


cdef ml_value_sink SINK
SINK.feed = _feed
