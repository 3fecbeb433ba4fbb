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
from cpython.dict cimport PyDict_Clear, PyDict_GetItemWithError, PyDict_Size
from cpython.pycapsule cimport PyCapsule_New
from cpython.ref cimport Py_INCREF, Py_REFCNT, Py_XDECREF
from cpython.set cimport PySet_Contains
from cpython.object cimport PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.list cimport PyList_AsTuple, PyList_GET_ITEM, PyList_GET_SIZE, PyList_SetItem
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_SET_ITEM
from libc.stdint cimport int64_t
from libc.string cimport memcmp

from metalog.codec.compiled._reader cimport (
    METALOG_CYTHON_VERSION,
    ReadFn,
    entry_fn,
    ml_field,
    ml_generic_alloc,
    ml_member_offset,
    ml_refs,
    ml_set_slot,
    ml_slot,
    read_entry,
    read_entry_into,
)

from metalog.codec.compiled.sinks cimport ml_value_sink

cdef extern from *:
    """
    /* A new instance of a tuple subclass (a NamedTuple) of n items, to be set with PyTuple_SET_ITEM. */
    static PyObject *ml_new_tuple_of(PyObject *cls, Py_ssize_t n) {
        return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, n);
    }
    /* A new instance of a class of slots (every slot unset), as object.__new__(cls) makes one. */
    static PyObject *ml_new_of(PyObject *cls) { return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0); }
    /* The slot at off of o set to the int v. The int the slot holds is given v's value in place where only the
       slot holds it (its reference count is 1: nothing else can see it change), it is an exact int of one digit
       past the small ints (CPython's shared ones) and v is one too; else a new int replaces it. One int made and
       freed per record otherwise (a loader's offset). */
    #if PY_VERSION_HEX < 0x030C0000
    #define ML_ONE_DIGIT(l) (Py_SIZE(l) == 1)
    #define ML_DIGIT0(l) (((PyLongObject *)(l))->ob_digit[0])
    #else
    #define ML_ONE_DIGIT(l) (((PyLongObject *)(l))->long_value.lv_tag == (1 << 3))
    #define ML_DIGIT0(l) (((PyLongObject *)(l))->long_value.ob_digit[0])
    #endif
    static int ml_set_int_slot(PyObject *o, Py_ssize_t off, int64_t v) {
        PyObject **at = (PyObject **)((char *)o + off);
        PyObject *old = *at, *made;
        if (old != NULL && v > 256 && v < ((int64_t)1 << PyLong_SHIFT) && Py_REFCNT(old) == 1
                && PyLong_CheckExact(old) && ML_ONE_DIGIT(old) && ML_DIGIT0(old) > 256) {
            ML_DIGIT0(old) = (digit)v;
            return 0;
        }
        made = PyLong_FromLongLong(v);
        if (made == NULL)
            return -1;
        *at = made;
        Py_XDECREF(old);
        return 0;
    }
    """
    object ml_new_tuple_of(object cls, Py_ssize_t n)
    object ml_new_of(object cls)
    Py_ssize_t PySet_GET_SIZE(object s)  # (of a set only)
    int ml_set_int_slot(object o, Py_ssize_t off, int64_t v) except -1

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
    PARTITION_RECORD = 4  # ValueReplay.partition_record
    CONFIG = 5  # ValueReplay.config
    N_KINDS = 6
    OWN_RULES = PARTITION_CHANGE  # this kind and those after it: the twin's own rules, which keep no record


cdef struct Entry:
    int kind
    ReadFn fn  # the compiled reader's C entry point, or NULL: ``reader`` is called
    PyObject *reader  # borrowed: ValueReplay.dispatch holds them
    PyObject *rule


# The loader's fields read and written per record, where they are slots (``metalog.state.loader.LoaderPosition``)
LOADER_SLOTS = ("offset", "delta")
cdef enum:
    LOADER_OFFSET = 0
    LOADER_DELTA = 1


# PartitionRecord's fields partition_record reads besides its lists (``PartitionRecordParts.lists``), in this order
# (their slots' offsets: ValueReplay.pr_off, the lists' after them)
PARTITION_RECORD_FIELDS = ("directories", "leader_recovery_state", "topic_id", "partition_id", "leader", "leader_epoch",
                           "partition_epoch")
cdef enum:
    N_PR_FIELDS = 7
    N_PR_LISTS = 6  # PartitionRecordParts.lists: checked where bound
    PR_DIRECTORIES = 0
    PR_RECOVERY = 1
    PR_TOPIC_ID = 2
    PR_PARTITION_ID = 3
    PR_LEADER = 4
    PR_LEADER_EPOCH = 5
    PR_PARTITION_EPOCH = 6
    PR_REPLICAS = N_PR_FIELDS  # the first list (checked where bound)

# ConfigRecord's fields config reads (ValueReplay.cfg_off)
CONFIG_FIELDS = ("resource_type", "resource_name", "name", "value")
cdef enum:
    N_CONFIG_FIELDS = 4

# MetadataDelta's fields the compiled rules read (ValueReplay.d_off), where the delta is of the class of the parts
DELTA_FIELDS = ("topics", "deleted_topics", "image", "configs")
cdef enum:
    D_TOPICS = 0
    D_DELETED_TOPICS = 1
    D_IMAGE = 2
    D_CONFIGS = 3
    N_DELTA_FIELDS = 4


# The slots of the TopicDelta a record of a topic the delta has not touched yet makes, in ``TopicDelta.__slots__``'
# order; ``TopicDelta(name, id, base)`` sets them to name, id, base, base.partitions and a new dict.
TOPIC_DELTA_SLOTS = ("name", "id", "base", "base_partitions", "partitions")


cdef class ValueReplay:
    """``loader.replay_value``, compiled (see the module's docstring): ``ValueReplay(loader, pure, parts)``, where
    ``pure`` is the loader's pure ``replay_value`` (bound) and ``parts`` a ``ValueReplayParts``. It uses the loader's
    public ``delta``, ``offset`` and ``load_marker`` only."""

    cdef dict dispatch
    cdef dict kept  # the loader's kept_topic_deltas (None: none kept)
    cdef list spares  # the loader's spare_registrations (None: none)
    cdef object loader, pure, noop, misses, located, replay_error, pc_rule, registration, pc_cls, topic_cls
    cdef object no_leader_change, no_recovery_change, recovery_states, migrating
    cdef object pr_rule, pr_cls, cfg_rule, cfg_cls, delta_cls
    cdef object image_cls  # MetadataImage, whose topics are read at their slot (image_topics_off)
    cdef Py_ssize_t image_topics_off
    cdef Py_ssize_t pr_off[N_PR_FIELDS + N_PR_LISTS]  # PartitionRecord's slots: PARTITION_RECORD_FIELDS', the lists'
    cdef Py_ssize_t pr_list_at[N_PR_LISTS]  # the registration field each list fills
    cdef bint pr_null_empty[N_PR_LISTS]  # a null list is empty (else the rule refuses it)
    cdef Py_ssize_t cfg_off[N_CONFIG_FIELDS]
    cdef Py_ssize_t d_off[N_DELTA_FIELDS]
    cdef list scratch  # by kind: the record the twin's own rules read their records into (None: none yet)
    cdef Py_ssize_t pc_off[N_RECORD_FIELDS + N_LISTS]  # the record's slots: RECORD_FIELDS', then the lists'
    cdef Py_ssize_t list_at[N_LISTS]  # the registration field each list replaces
    cdef Py_ssize_t loader_off[2]  # the loader's offset and delta slots (LoaderPosition); 0: plain attributes
    cdef Py_ssize_t topic_off[2]
    cdef Py_ssize_t topic_init[3]  # TopicDelta's name, id and base slots
    cdef bint topic_direct
    cdef Py_ssize_t n_fields, leader_at, leader_epoch_at, partition_epoch_at, recovery_at, replicas_at, directories_at
    cdef const unsigned char *noop_p
    cdef Py_ssize_t noop_n
    cdef int frame_version
    cdef int64_t at  # the offset of the record being replayed (``pure_rule``)
    cdef Entry table[TABLE_KEYS * TABLE_VERSIONS]
    cdef public object c_value_sink

    def __init__(self, loader, pure, parts):
        cdef Py_ssize_t i
        self.loader = loader  # the MetadataLoader
        kept = getattr(loader, "kept_topic_deltas", None)
        self.kept = kept if type(kept) is dict else None
        spares = getattr(loader, "spare_registrations", None)
        self.spares = spares if type(spares) is list else None
        for i, name in enumerate(LOADER_SLOTS):  # (a subclass that makes either a property: set as an attribute)
            self.loader_off[i] = max(ml_member_offset(getattr(type(loader), name, None)), 0)
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
        self.bind_partition_record(parts.partition_record)
        self.bind_config(parts.config, parts.delta)
        self.image_cls = parts.image
        self.image_topics_off = _offset(self.image_cls, "topics")
        self.bind_table(parts.entries)
        self.scratch = [None] * N_KINDS
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
        self.topic_direct = (tuple(self.topic_cls.__slots__) == TOPIC_DELTA_SLOTS and type(self.topic_cls) is type
                             and self.topic_cls.__bases__ == (object,) and ml_generic_alloc(self.topic_cls))
        for i, name in enumerate(TOPIC_DELTA_SLOTS[:3]):
            self.topic_init[i] = _offset(self.topic_cls, name) if self.topic_direct else -1

    cdef bind_partition_record(self, record):
        """The slots and positions ``partition_record`` reads: the record's by ``PARTITION_RECORD_FIELDS`` and the
        lists ``record`` names, the registration's (``bind_partition_change``'s) by the lists' fields and the names of
        the fields copied; every registration field is written."""
        cdef Py_ssize_t i
        self.pr_rule, self.pr_cls = record.rule, record.record
        fields = tuple(self.registration._fields)
        if len(record.lists) != N_PR_LISTS or record.lists[0][:2] != ("replicas", "replicas"):
            raise TypeError("the PartitionRecord parts do not match the twin's")
        for i, name in enumerate(PARTITION_RECORD_FIELDS):
            self.pr_off[i] = _offset(self.pr_cls, name)
        for i, (name, field, null_empty) in enumerate(record.lists):
            self.pr_off[N_PR_FIELDS + i] = _offset(self.pr_cls, name)
            self.pr_list_at[i] = fields.index(field)
            self.pr_null_empty[i] = null_empty
        written = {fields[self.pr_list_at[i]] for i in range(N_PR_LISTS)}
        written |= {"directories", "leader_recovery_state", "leader", "leader_epoch", "partition_epoch"}
        if written != set(fields):
            raise TypeError("the PartitionRecord parts do not write every PartitionRegistration field")

    cdef bind_config(self, config, delta_cls):
        """The slots ``config`` reads: the record's (``CONFIG_FIELDS``) and the delta's (``DELTA_FIELDS``)."""
        cdef Py_ssize_t i
        self.cfg_rule, self.cfg_cls, self.delta_cls = config.rule, config.record, delta_cls
        for i, name in enumerate(CONFIG_FIELDS):
            self.cfg_off[i] = _offset(self.cfg_cls, name)
        for i, name in enumerate(DELTA_FIELDS):
            self.d_off[i] = _offset(delta_cls, name)

    cdef bind_table(self, entries):
        """The C dispatch table, from ``dispatch`` and the readers' C entry points (``entries``, same keys)."""
        cdef Entry *e
        for key, (reader, rule) in self.dispatch.items():
            if not 0 <= key >> 8 < TABLE_KEYS or not 0 <= key & 0xFF < TABLE_VERSIONS:
                continue  # the pure method reads it
            e = &self.table[(key >> 8) * TABLE_VERSIONS + (key & 0xFF)]
            e.reader, e.rule = <PyObject *>reader, <PyObject *>rule
            e.kind = (MARKER if rule is None else PARTITION_CHANGE if rule is self.pc_rule
                      else PARTITION_RECORD if rule is self.pr_rule else CONFIG if rule is self.cfg_rule else RULE)
            entry = entries.get(key)
            e.fn = NULL if entry is None else entry_fn(entry)

    def __call__(self, value, offset):
        cdef int overflow = 1
        cdef int64_t at = 0
        if type(value) is bytes and type(offset) is int:
            at = PyLong_AsLongLongAndOverflow(offset, &overflow)
        if overflow:  # (not bytes, not an int, or an offset past int64: the pure method)
            self.pure(value, offset)
        else:
            self.feed(<const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), at, value)

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

    cdef int feed(self, const unsigned char *p, Py_ssize_t n, int64_t offset, object value) except -1:
        """The value p[0:n] (``value``, its bytes, or None: made here when needed) at ``offset`` (an int object is
        made only where Python code is told it: ``set_offset`` keeps the loader's own)."""
        cdef object loader = self.loader
        cdef Entry *e
        cdef Py_ssize_t stop
        if n == self.noop_n and memcmp(p, self.noop_p, n) == 0:  # most of a quiet cluster's log; it changes nothing
            return self.set_offset(offset)
        if n < 3 or p[0] != self.frame_version or p[1] >= TABLE_KEYS or p[2] >= TABLE_VERSIONS:
            return self.slow(p, n, offset, value)
        e = &self.table[p[1] * TABLE_VERSIONS + p[2]]
        if e.kind == UNKNOWN:
            return self.slow(p, n, offset, value)
        if e.fn is not NULL and e.kind >= OWN_RULES:
            record = self.read_own(e, p, n, &stop)
            if record is None:  # refused: the pure method reads it or raises
                return self.slow(p, n, offset, value)
        elif e.fn is not NULL:
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
        self.at = offset  # (where a rule's error is located: ``pure_rule``)
        if e.kind == MARKER:
            loader.load_marker(record.NAME, offset)
        elif e.kind == PARTITION_CHANGE:
            self.partition_change(self.delta(), record)
        elif e.kind == PARTITION_RECORD:
            self.partition_record(self.delta(), record)
        elif e.kind == CONFIG:
            self.config(self.delta(), record)
        else:
            self.pure_rule(<object>e.rule, self.delta(), record)
        return self.set_offset(offset)

    cdef pure_rule(self, rule, d, r):
        """``rule(d, r)``: the rule itself, for a record the twin does not read or one its own rules hand on, its
        ReplayError located at the record's offset (``at``) as the pure method locates it. The twin's own rules raise
        no ReplayError themselves (every record they refuse comes here), so the record loop has no ``try``, whose
        saving of the exception state cost about 15 instructions per record."""
        try:
            return rule(d, r)
        except self.replay_error as error:
            raise self.located(error, self.at, r) from None

    cdef inline object read_own(self, Entry *e, const unsigned char *p, Py_ssize_t n, Py_ssize_t *stop):
        """A record for the twin's own rules, which take its values and keep nothing else of it: read into the last
        record of its kind where nothing else holds that one (no object made or freed per record), its arrays as
        tuples (the registration's own, not lists copied); None where the reader refuses it (the half-filled
        record is then dropped)."""
        record = read_entry_into(e.fn, PyList_GET_ITEM(self.scratch, e.kind), p, 3, n, stop)
        if record is not <object>PyList_GET_ITEM(self.scratch, e.kind):
            self.scratch[e.kind] = record
        return record

    cdef inline int set_offset(self, int64_t offset) except -1:
        """``loader.offset = offset``: at the slot where it is one, the int there reused where only the slot holds it
        (``ml_set_int_slot``)."""
        cdef Py_ssize_t off = self.loader_off[LOADER_OFFSET]
        if off:
            ml_set_int_slot(self.loader, off, offset)
        else:
            self.loader.offset = offset
        return 0

    cdef inline object delta(self):
        """``loader.delta``: from its slot where it is one."""
        return ml_field(self.loader, self.loader_off[LOADER_DELTA], "delta")

    cdef partition_change(self, d, r):
        """``metalog.state.rules.partition_change``, compiled (half of a busy log's records): a change of leader, ISR,
        ELR, leader recovery state, replicas or directories of a known partition, the topic delta made over the
        image's topic where the delta has none yet (``MetadataDelta.topic_delta``). Whatever the rule refuses (an
        unknown topic or partition, directories that do not fit the replicas, an unknown recovery state) and a record
        or topic delta of another class than the ones it knows go to the rule itself, which raises its own error. The
        record's and the topic delta's fields are read straight from their slots, the registration's placed by their
        names (``bind_partition_change``). A registration this delta made and alone holds (the partition changed
        before in this delta, its registration in no image and held by nothing else: its reference count is the
        delta's one) is changed in place, not copied and freed."""
        cdef PyObject *v
        cdef PyObject *held
        cdef Py_ssize_t i
        cdef dict partitions
        cdef bint in_place
        if type(r) is not self.pc_cls:
            return self.pure_rule(self.pc_rule, d, r)
        for i in range(N_RECORD_FIELDS + N_LISTS):  # every field set (else the rule raises its own error)
            if ml_slot(r, self.pc_off[i]) is NULL:
                return self.pure_rule(self.pc_rule, d, r)
        recovery = <object>ml_slot(r, self.pc_off[LEADER_RECOVERY_STATE])
        cdef bint recovery_changes = recovery is not self.no_recovery_change and recovery != self.no_recovery_change
        if recovery_changes and recovery not in self.recovery_states:
            return self.pure_rule(self.pc_rule, d, r)
        topic = self.topic_of(d, <object>ml_slot(r, self.pc_off[TOPIC_ID]))
        if topic is None:
            return self.pure_rule(self.pc_rule, d, r)
        partitions = <dict>ml_slot(topic, self.topic_off[0])
        pid = <object>ml_slot(r, self.pc_off[PARTITION_ID])
        held = PyDict_GetItemWithError(partitions, pid)  # (borrowed; not PyDict_GetItem, which saves and restores
        # the error state per call)
        in_place = held is not NULL and Py_REFCNT(<object>held) == 1
        if held is NULL:
            old = (<dict>ml_slot(topic, self.topic_off[1])).get(pid)
            if old is None:
                return self.pure_rule(self.pc_rule, d, r)  # raises the rule's own error
        else:
            old = <object>held
        if type(old) is not self.registration or PyTuple_GET_SIZE(old) != self.n_fields:
            return self.pure_rule(self.pc_rule, d, r)
        if in_place:  # (nothing can see it change: only the delta's dict held it)
            new = old
        else:
            new = self.registration_to_fill()
            for i in range(self.n_fields):
                _replace_item(new, i, <object>PyTuple_GET_ITEM(old, i))
        if (ml_slot(r, self.pc_off[REPLICAS]) is not <PyObject *>None
                or ml_slot(r, self.pc_off[DIRECTORIES]) is not <PyObject *>None):
            if not self.change_replicas(new, r):
                return self.pure_rule(self.pc_rule, d, r)  # (new, never stored, goes; nothing changed in place yet)
        for i in range(N_LISTS):
            v = ml_slot(r, self.pc_off[N_RECORD_FIELDS + i])
            if v is not <PyObject *>None:
                _replace_item(new, self.list_at[i], tuple(<object>v))
        leader = <object>ml_slot(r, self.pc_off[LEADER])
        if leader is not self.no_leader_change and leader != self.no_leader_change:
            _replace_item(new, self.leader_at, leader)
            _replace_item(new, self.leader_epoch_at, <object>PyTuple_GET_ITEM(old, self.leader_epoch_at) + 1)
        if recovery_changes:
            _replace_item(new, self.recovery_at, recovery)
        _replace_item(new, self.partition_epoch_at, <object>PyTuple_GET_ITEM(old, self.partition_epoch_at) + 1)
        if not in_place:
            partitions[pid] = new

    cdef object registration_to_fill(self):
        """A registration for ``partition_change`` to fill, every item replaced: one a publish took out of the working
        copy where only the working copy held it (``metalog.state.compiled.publish``, the loader's
        ``spare_registrations``), where nothing else holds it still; else a new one (its items unset)."""
        if self.spares:
            spare = self.spares.pop()
            if Py_REFCNT(spare) == 1 and type(spare) is self.registration and PyTuple_GET_SIZE(spare) == self.n_fields:
                return spare  # (this code alone holds it: reference count 1 before the pop's, now this one)
        return ml_new_tuple_of(self.registration, self.n_fields)

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

    cdef partition_record(self, d, r):
        """``metalog.state.rules.partition_record``, compiled: a partition (re)registered in a topic the delta has or
        the image holds, its lists copied as tuples, its directories as ``rules._directories`` makes them. Whatever the
        rule refuses (an unknown or removed topic, directories that do not fit the replicas, an unknown recovery
        state, a null list the rule does not take as empty) and a record or topic delta of another class than the
        ones it knows go to the rule itself, which raises its own error. Fields are placed by their names
        (``bind_partition_record``)."""
        cdef PyObject *v
        cdef Py_ssize_t i, n
        if type(r) is not self.pr_cls:
            return self.pure_rule(self.pr_rule, d, r)
        for i in range(N_PR_FIELDS + N_PR_LISTS):  # every field set (else the rule raises its own error)
            if ml_slot(r, self.pr_off[i]) is NULL:
                return self.pure_rule(self.pr_rule, d, r)
        recovery = <object>ml_slot(r, self.pr_off[PR_RECOVERY])
        if recovery not in self.recovery_states:
            return self.pure_rule(self.pr_rule, d, r)
        replicas = <object>ml_slot(r, self.pr_off[PR_REPLICAS])
        if type(replicas) is not tuple and type(replicas) is not list:
            return self.pure_rule(self.pr_rule, d, r)
        n = len(replicas)
        directories = <object>ml_slot(r, self.pr_off[PR_DIRECTORIES])
        if directories is not None and type(directories) is not tuple and type(directories) is not list:
            return self.pure_rule(self.pr_rule, d, r)
        if directories is None or len(directories) == 0:
            directories = (self.migrating,) * n  # (rules._directories: null or empty, MIGRATING for every replica)
        elif len(directories) != n:
            return self.pure_rule(self.pr_rule, d, r)
        else:
            directories = _as_tuple(directories)
        topic = self.topic_of(d, <object>ml_slot(r, self.pr_off[PR_TOPIC_ID]))
        if topic is None:
            return self.pure_rule(self.pr_rule, d, r)
        new = ml_new_tuple_of(self.registration, self.n_fields)
        for i in range(self.n_fields):  # (None until set: a tuple of NULLs must not be freed)
            _set_item(new, i, None)
        for i in range(N_PR_LISTS):
            v = ml_slot(r, self.pr_off[N_PR_FIELDS + i])
            if v is <PyObject *>None and self.pr_null_empty[i]:
                _replace_item(new, self.pr_list_at[i], ())
            elif type(<object>v) is tuple or type(<object>v) is list:
                _replace_item(new, self.pr_list_at[i], _as_tuple(<object>v))
            else:
                return self.pure_rule(self.pr_rule, d, r)  # (new, never stored, goes)
        _replace_item(new, self.directories_at, directories)
        _replace_item(new, self.leader_at, <object>ml_slot(r, self.pr_off[PR_LEADER]))
        _replace_item(new, self.recovery_at, recovery)
        _replace_item(new, self.leader_epoch_at, <object>ml_slot(r, self.pr_off[PR_LEADER_EPOCH]))
        _replace_item(new, self.partition_epoch_at, <object>ml_slot(r, self.pr_off[PR_PARTITION_EPOCH]))
        (<dict>ml_slot(topic, self.topic_off[0]))[<object>ml_slot(r, self.pr_off[PR_PARTITION_ID])] = new

    cdef config(self, d, r):
        """``metalog.state.rules.config``: the config set (a null value: deleted) in the delta's changes of its
        resource, ``rules.config_resource``. A record or delta of another class goes to the rule."""
        cdef Py_ssize_t i
        if type(r) is not self.cfg_cls or type(d) is not self.delta_cls:
            return self.pure_rule(self.cfg_rule, d, r)
        for i in range(N_CONFIG_FIELDS):
            if ml_slot(r, self.cfg_off[i]) is NULL:
                return self.pure_rule(self.cfg_rule, d, r)
        configs = <object>ml_slot(d, self.d_off[D_CONFIGS])
        if type(configs) is not dict:
            return self.pure_rule(self.cfg_rule, d, r)
        resource = (<object>ml_slot(r, self.cfg_off[0]), <object>ml_slot(r, self.cfg_off[1]))
        changes = (<dict>configs).get(resource)
        if changes is None:
            changes = (<dict>configs)[resource] = {}
        elif type(changes) is not dict:
            return self.pure_rule(self.cfg_rule, d, r)
        (<dict>changes)[<object>ml_slot(r, self.cfg_off[2])] = <object>ml_slot(r, self.cfg_off[3])

    cdef topic_of(self, d, topic_id):
        """``d.topic_delta(topic_id)`` where it is a TopicDelta of the class the twin knows and ``d`` a MetadataDelta;
        None otherwise (the rule then raises its own error, or does what the twin does not)."""
        cdef PyObject *topics
        if type(d) is not self.delta_cls:
            return None
        topics = ml_slot(d, self.d_off[D_TOPICS])
        if topics is NULL or type(<object>topics) is not dict:
            return None
        topic = (<dict>topics).get(topic_id)
        if topic is None:
            topic = self.topic_delta(d, <dict>topics, topic_id)
        return topic if type(topic) is self.topic_cls else None

    cdef topic_delta(self, d, dict topics, topic_id):
        """``d.topic_delta(topic_id)`` for a topic the delta has no delta of yet: one made over the image's topic and
        kept in ``topics`` (``d.topics``); None for a topic deleted in this delta or unknown to the image (the rule
        raises)."""
        cdef PyObject *deleted = ml_slot(d, self.d_off[D_DELETED_TOPICS])
        cdef PyObject *image = ml_slot(d, self.d_off[D_IMAGE])
        if deleted is NULL or image is NULL or type(<object>deleted) is not set:
            return self.pure_topic_delta(d, topic_id)
        if PySet_GET_SIZE(<object>deleted) and PySet_Contains(<object>deleted, topic_id):
            return None
        image_topics = self.image_topics(<object>image)
        if type(image_topics) is not dict:
            return self.pure_topic_delta(d, topic_id)
        base = (<dict>image_topics).get(topic_id)
        if base is None:
            return None
        if self.topic_direct:  # TopicDelta(base.name, topic_id, base), its slots set here (``bind_partition_change``)
            topic = self.kept_topic_delta(topic_id, base)
            if topic is None:
                topic = ml_new_of(self.topic_cls)
                ml_set_slot(topic, self.topic_init[0], base.name)
                ml_set_slot(topic, self.topic_init[1], topic_id)
                ml_set_slot(topic, self.topic_init[2], base)
                ml_set_slot(topic, self.topic_off[1], base.partitions)
                ml_set_slot(topic, self.topic_off[0], {})
        else:
            topic = self.topic_cls(base.name, topic_id, base)
        topics[topic_id] = topic
        return topic

    cdef inline object image_topics(self, object image):
        """``image.topics``: at its slot where the image is a ``MetadataImage`` (its class, from the parts)."""
        cdef PyObject *v = ml_slot(image, self.image_topics_off) if type(image) is self.image_cls else NULL
        return <object>v if v is not NULL else image.topics

    cdef object kept_topic_delta(self, topic_id, base):
        """The topic's delta an earlier publish kept (``metalog.state.compiled.publish``, in the loader's
        ``kept_topic_deltas``), emptied, where only that map holds it (its reference count is 1: no delta, subscriber
        or caller does) and it is over ``base``, the image's topic; None otherwise (a new one is made)."""
        cdef PyObject *held
        cdef PyObject *partitions
        if self.kept is None:
            return None
        held = PyDict_GetItemWithError(self.kept, topic_id)  # (borrowed)
        if held is NULL or ml_refs(held) != 1 or type(<object>held) is not self.topic_cls:
            return None
        partitions = ml_slot(<object>held, self.topic_off[0])
        if (ml_slot(<object>held, self.topic_init[2]) is not <PyObject *>base or partitions is NULL
                or type(<object>partitions) is not dict):
            return None
        if PyDict_Size(<object>partitions):  # (a delta dropped whole since: an abort; or the pure publish ran)
            PyDict_Clear(<object>partitions)
        return <object>held

    cdef pure_topic_delta(self, d, topic_id):
        """``d.topic_delta(topic_id)`` itself, for a delta whose fields the twin does not read; None where it raises
        (the rule then raises its own error)."""
        try:
            return d.topic_delta(topic_id)
        except self.replay_error:
            return None

    cdef int slow(self, const unsigned char *p, Py_ssize_t n, int64_t offset, object value) except -1:
        """The pure method: it reads the rare forms, or raises its own error."""
        if value is None:
            value = PyBytes_FromStringAndSize(<const char *>p, n)
        self.pure(value, offset)
        return 0



cdef inline object _as_tuple(object items):
    """A tuple or a list (checked by the caller) as a tuple: the tuple itself."""
    return items if type(items) is tuple else PyList_AsTuple(items)


cdef inline void _set_item(object t, Py_ssize_t i, object item) noexcept:
    """Item ``i`` of a new tuple set (the tuple takes a reference)."""
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)


cdef inline void _replace_item(object t, Py_ssize_t i, object item) noexcept:
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
