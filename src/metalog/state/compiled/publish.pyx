# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``MetadataLoader.end_batch``, the per-batch publish of a loader that keeps no image per
publish (``images=False``, as the analysis replays): hand-written.

A ``BatchPublish`` is a loader's ``end_batch``: unless a transaction is open, it tells ``on_publish`` the delta, then
makes the delta's changes in the loader's working copy and empties the delta (``MetadataDelta.apply_to`` and
``clear``), as the pure method does. Every change but the features' (brokers, controllers, topics and partitions,
configs, client quotas, ACLs, SCRAM credentials, delegation tokens, the offset and the next producer id) is made
here; the rest (a loader that builds images, a delta that changes the features, a delta over another image or of a
class it does not know) goes to the pure methods. What it needs comes in one object, ``metalog.state.publish.BatchPublishParts``.

``BatchEnd`` (``publish.pxd``) is the C-level entry a compiled batch loop calls once per batch: ``end_batch(last)``.
An ``on_publish`` that carries ``c_on_publish`` (``publish.pxd``'s ``ml_on_publish``, the analysis' compiled step) is
told the delta through it, in C; any other is called from Python, as the pure method calls it.
"""

cimport cython
from cpython.dict cimport PyDict_Clear, PyDict_Copy, PyDict_GetItemWithError, PyDict_Next, PyDict_SetItem, PyDict_Update
from cpython.list cimport PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.object cimport Py_EQ, PyObject, PyObject_RichCompareBool
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport int64_t

from metalog.codec.compiled._reader cimport (
    METALOG_CYTHON_VERSION,
    ml_field,
    ml_member_offset,
    ml_refs,
    ml_set_slot,
    ml_slot,
)

cdef extern from *:
    """
    /* A delta's map (a set where is_set): 1 when it holds something, 0 when empty; -1 when unset (NULL) or of
       another type than an exact dict (set). */
    static inline int ml_filled(PyObject *v, int is_set) {
        if (v == NULL)
            return -1;
        if (is_set)
            return PySet_CheckExact(v) ? PySet_GET_SIZE(v) != 0 : -1;
        return PyDict_CheckExact(v) ? PyDict_GET_SIZE(v) != 0 : -1;
    }
    """
    Py_ssize_t PyDict_GET_SIZE(object d)  # (a macro: of a dict only)
    Py_ssize_t PySet_GET_SIZE(object s)  # (of a set only)
    int ml_filled(PyObject *v, int is_set)

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()  # (the twins' status line names it: ``core.twin_status``)


# MetadataDelta's fields this twin reads, in this order (their slots' offsets: BatchPublish.d_off)
DELTA_FIELDS = ("image", "offset", "metadata_version", "features", "zk_migration_state", "next_producer_id",
                "brokers", "controllers", "acls", "scram", "delegation_tokens", "topics", "deleted_topics", "configs",
                "cleared_configs", "client_quotas")
cdef enum:
    IMAGE = 0
    OFFSET = 1
    METADATA_VERSION = 2
    FEATURES = 3
    ZK_MIGRATION_STATE = 4
    NEXT_PRODUCER_ID = 5
    FIRST_MAP = 6  # the maps the delta overlays on the working copy's map of the same name, one for one
    N_MAPS = 5
    TOPICS = 11
    DELETED_TOPICS = 12
    CONFIGS = 13
    CLEARED_CONFIGS = 14
    CLIENT_QUOTAS = 15
    N_DELTA_FIELDS = 16
# The delta's maps and sets (``BatchPublish.shape``: a bit each, 1 << its index in DELTA_FIELDS), and its single values
cdef enum:
    N_CHANGES = 11
    N_SINGLES = 5
cdef int CHANGES[N_CHANGES]
CHANGES[:] = [TOPICS, DELETED_TOPICS, FIRST_MAP, FIRST_MAP + 1, FIRST_MAP + 2, FIRST_MAP + 3, FIRST_MAP + 4, CONFIGS,
              CLEARED_CONFIGS, CLIENT_QUOTAS, FEATURES]
cdef int SINGLES[N_SINGLES]
SINGLES[:] = [IMAGE, OFFSET, METADATA_VERSION, ZK_MIGRATION_STATE, NEXT_PRODUCER_ID]
# The most registrations a loader keeps spare (``BatchPublish.merge_partitions``): about what a publish of a busy
# cluster's transaction start replaces, so that a loader holds few more than its state
cdef enum:
    MAX_SPARE_REGISTRATIONS = 4096
# The loader's fields read or written per batch (BatchPublish.l_off): slots of ``MetadataLoader`` (and
# ``LoaderPosition``'s offset and delta), read and written at their places; one a subclass made something else
# (offset 0) goes through getattr/setattr
LOADER_FIELDS = ("offset", "delta", "marker_state", "clean_offset", "published_state", "published_image", "images",
                 "on_publish")
cdef enum:
    L_OFFSET = 0
    L_DELTA = 1
    L_MARKER_STATE = 2
    L_CLEAN_OFFSET = 3
    L_PUBLISHED_STATE = 4
    L_PUBLISHED_IMAGE = 5
    L_IMAGES = 6
    L_ON_PUBLISH = 7
    N_LOADER_FIELDS = 8
# TopicDelta's fields read here (BatchPublish.t_off)
TOPIC_DELTA_FIELDS = ("name", "base", "partitions")
cdef enum:
    T_NAME = 0
    T_BASE = 1
    T_PARTITIONS = 2
# MetadataImage's fields a working copy is read and changed at (BatchPublish.w_off): its single values, the maps
# the delta's maps of the same names overlay (DELTA_FIELDS[FIRST_MAP:], one for one), then the rest
IMAGE_FIELDS = ("offset", "features", "next_producer_id", "brokers", "controllers", "acls", "scram",
                "delegation_tokens", "topics", "topics_by_name", "configs", "client_quotas")
cdef enum:
    W_OFFSET = 0
    W_FEATURES = 1
    W_NEXT_PRODUCER_ID = 2
    W_FIRST_MAP = 3
    W_TOPICS = 8
    W_TOPICS_BY_NAME = 9
    W_CONFIGS = 10
    W_CLIENT_QUOTAS = 11
    N_IMAGE_FIELDS = 12
# TopicImage's fields read here (BatchPublish.ti_off)
TOPIC_IMAGE_FIELDS = ("name", "partitions")
cdef enum:
    TI_NAME = 0
    TI_PARTITIONS = 1


cdef class BatchEnd:
    """A loader's batch end, callable from C (``end_batch``): the base of the twin, without fields of its own."""

    cdef int end_batch(self, int64_t last_offset) except -1:
        raise NotImplementedError("BatchEnd is the twin's base class")


@cython.final  # (its methods called directly, the small ones inlined: no subclass overrides them)
cdef class BatchPublish(BatchEnd):
    """``loader.end_batch``, compiled (see the module's docstring): ``BatchPublish(loader, pure, parts)``, where
    ``pure`` is the loader's pure ``end_batch`` (bound) and ``parts`` a ``BatchPublishParts``."""

    cdef object pure, started, no_transaction, delta_cls, topic_delta_cls, topic_image_cls, image_cls
    cdef object loader
    cdef dict kept  # the loader's kept_topic_deltas (None: none kept)
    cdef list spares  # the loader's spare_registrations (None: none)
    cdef object registration  # PartitionRegistration
    cdef Py_ssize_t d_off[N_DELTA_FIELDS]
    cdef Py_ssize_t t_off[3]
    cdef Py_ssize_t w_off[N_IMAGE_FIELDS]  # a working copy's fields' slots (IMAGE_FIELDS)
    cdef Py_ssize_t c_off[N_CHANGES]  # the slots of the delta's maps and sets (CHANGES), in that order
    cdef int c_bit[N_CHANGES]  # and the bit of each in a shape
    cdef int c_set[N_CHANGES]  # 1 for a set
    cdef Py_ssize_t s_off[N_SINGLES]  # the slots of its single values (SINGLES)
    cdef Py_ssize_t ti_off[2]  # a TopicImage's (TOPIC_IMAGE_FIELDS)
    cdef Py_ssize_t l_off[N_LOADER_FIELDS]  # the loader's fields' slots (LOADER_FIELDS); 0: not a slot
    cdef object features, metadata_version, zk_migration_state  # the last features seen, and their two levels
    cdef tuple map_names
    cdef object subscriber  # the last on_publish seen (held, so that its identity is not reused)
    cdef ml_on_publish *c_subscriber  # its C entry (its c_on_publish), or NULL: it is called from Python

    def __init__(self, loader, pure, parts):
        cdef Py_ssize_t i
        self.pure = pure  # its pure end_batch (bound)
        self.started, self.no_transaction = parts.started, parts.no_transaction
        self.delta_cls, self.topic_delta_cls = parts.delta, parts.topic_delta
        self.topic_image_cls, self.image_cls = parts.topic_image, parts.image
        for i, name in enumerate(DELTA_FIELDS):
            self.d_off[i] = _offset(self.delta_cls, name)
        for i, name in enumerate(TOPIC_DELTA_FIELDS):
            self.t_off[i] = _offset(self.topic_delta_cls, name)
        for i in range(N_CHANGES):
            self.c_off[i] = self.d_off[CHANGES[i]]
            self.c_bit[i] = 1 << CHANGES[i]
            self.c_set[i] = CHANGES[i] == DELETED_TOPICS or CHANGES[i] == CLEARED_CONFIGS
        for i in range(N_SINGLES):
            self.s_off[i] = self.d_off[SINGLES[i]]
        for i, name in enumerate(IMAGE_FIELDS):
            self.w_off[i] = _offset(self.image_cls, name)
        for i, name in enumerate(TOPIC_IMAGE_FIELDS):
            self.ti_off[i] = _offset(self.topic_image_cls, name)
        self.map_names = DELTA_FIELDS[FIRST_MAP:FIRST_MAP + N_MAPS]
        if IMAGE_FIELDS[W_FIRST_MAP:W_FIRST_MAP + N_MAPS] != self.map_names:
            raise TypeError("the working copy's maps and the delta's are not the same")
        self.loader = loader  # the MetadataLoader
        for i, name in enumerate(LOADER_FIELDS):
            self.l_off[i] = max(ml_member_offset(getattr(type(loader), name, None)), 0)
        kept = getattr(loader, "kept_topic_deltas", None)
        self.kept = kept if type(kept) is dict else None
        spares = getattr(loader, "spare_registrations", None)
        self.spares = spares if type(spares) is list else None
        self.registration = parts.registration

    def __call__(self, last_offset):
        """The pure method's contract: the published image, or None while a transaction is open (with
        ``images=False``, None either way)."""
        cdef int overflow = 1
        cdef int64_t last = 0
        if type(last_offset) is int and not self.loader.images:
            last = PyLong_AsLongLongAndOverflow(last_offset, &overflow)
        if overflow:  # (not an int, past int64, or a loader that builds images: the pure method)
            return self.pure(last_offset)
        self.publish(last)
        return None

    cdef int end_batch(self, int64_t last_offset) except -1:
        return self.publish(last_offset)

    def c_end_batch(self, int64_t last_offset):
        """The C entry (``BatchEnd.end_batch``, called as a compiled caller calls it) from Python, for tests: 1 while
        a transaction is open, else 0."""
        return (<BatchEnd>self).end_batch(last_offset)

    cdef inline object get(self, int field):
        """The loader's field ``LOADER_FIELDS[field]``: at its slot where it is one and set (its name is looked up
        only where it is not: ``ml_field``'s arguments would be evaluated per call)."""
        cdef PyObject *v = ml_slot(self.loader, self.l_off[field]) if self.l_off[field] else NULL
        if v is NULL:
            return self.get_attribute(field)
        return <object>v

    cdef object get_attribute(self, int field):
        """``get``'s way for a field that is no slot (or is unset): getattr."""
        return ml_field(self.loader, 0, LOADER_FIELDS[field])

    cdef inline int put(self, int field, object value) except -1:
        """The loader's field ``LOADER_FIELDS[field]`` set to ``value``: at its slot where it is one."""
        cdef Py_ssize_t off = self.l_off[field]
        if off:
            ml_set_slot(self.loader, off, value)
        else:
            setattr(self.loader, LOADER_FIELDS[field], value)
        return 0

    cdef inline object image_field(self, object working, int field):
        """The working copy's field ``IMAGE_FIELDS[field]`` (``working`` is of the class whose slots ``w_off`` holds)."""
        cdef PyObject *v = ml_slot(working, self.w_off[field])
        if v is NULL:
            raise AttributeError(f"the working copy has no {IMAGE_FIELDS[field]}")
        return <object>v

    cdef inline object topic_field(self, object topic, int field):
        """A TopicImage's field ``TOPIC_IMAGE_FIELDS[field]``: at its slot (an object of another class: getattr)."""
        cdef PyObject *v = ml_slot(topic, self.ti_off[field]) if type(topic) is self.topic_image_cls else NULL
        if v is not NULL:
            return <object>v
        return getattr(topic, TOPIC_IMAGE_FIELDS[field])

    cdef int publish(self, int64_t last_offset) except -1:
        """``end_batch(last_offset)``: 1 when a transaction is open (nothing published), else 0."""
        cdef bint changes = False
        if self.get(L_MARKER_STATE) is self.started:
            return 1
        cdef object last = last_offset  # (one int object, told and kept)
        working = self.get(L_PUBLISHED_STATE)
        if self.get(L_IMAGES) or type(working) is not self.image_cls:
            self.pure(last)
            return 0
        delta = self.get(L_DELTA)
        if self.get(L_OFFSET) > self.get(L_CLEAN_OFFSET):  # records since the last publish: the delta's changes
            if type(delta) is not self.delta_cls or ml_slot(delta, self.d_off[IMAGE]) is not <PyObject *>working:
                self.pure(last)  # (over another image: a loader started inside a transaction)
                return 0
            changes = not self.changes_nothing(delta, working)
        if changes:
            ml_set_slot(delta, self.d_off[OFFSET], last)
            on_publish = self.get(L_ON_PUBLISH)
            if on_publish is not None:
                if on_publish is not self.subscriber:
                    self.subscribe(on_publish)
                if self.c_subscriber is not NULL:
                    self.c_subscriber.published(on_publish, delta, None)
                else:
                    on_publish(delta, None)
            if not self.apply_to(delta, working):
                self.forget_deleted(delta)
                delta.apply_to(working)
                delta.clear()
            if self.get(L_PUBLISHED_IMAGE) is not None:
                self.put(L_PUBLISHED_IMAGE, None)
        elif not self.at_offset(working, last_offset, last):
            # only the offset moves (a control batch, NoOpRecords): nothing told
            if self.get(L_PUBLISHED_IMAGE) is not None or type(delta) is not self.delta_cls:
                self.pure(last)
                return 0
            ml_set_slot(working, self.w_off[W_OFFSET], last)  # (set_working: only the offset changes)
            ml_set_slot(delta, self.d_off[OFFSET], last)
        self.put(L_CLEAN_OFFSET, last)
        if self.get(L_MARKER_STATE) is not self.no_transaction:
            self.put(L_MARKER_STATE, self.no_transaction)
        return 0

    cdef bint at_offset(self, object working, int64_t offset, object as_int) except -1:
        """The working copy's offset is ``offset`` (``as_int``): compared in C where it is an int of 64 bits."""
        cdef int overflow = 0
        cdef int64_t held
        at = self.image_field(working, W_OFFSET)
        if PyLong_CheckExact(at):
            held = PyLong_AsLongLongAndOverflow(at, &overflow)
            if not overflow:
                return held == offset
        return PyObject_RichCompareBool(at, as_int, Py_EQ)

    cdef int shape(self, object delta, bint any_only) except -2:
        """What the delta's maps and sets hold: a bit (1 << its index in DELTA_FIELDS) for each that holds something
        (``any_only``: for the first found only, the topics first: most deltas change them); -1 for a delta of
        another form (a field unset, a map that is no dict, a set that is no set): the pure methods then decide."""
        cdef int k, filled, mask = 0
        for k in range(N_CHANGES):
            filled = ml_filled(ml_slot(delta, self.c_off[k]), self.c_set[k])
            if filled < 0:
                return -1
            if filled:
                if any_only:
                    return self.c_bit[k]
                mask |= self.c_bit[k]
        for k in range(N_SINGLES):
            if ml_slot(delta, self.s_off[k]) is NULL:
                return -1
        return mask

    cdef bint changes_nothing(self, object delta, object working) except -1:
        """``MetadataDelta.changes_nothing``: every map and set of the delta empty, its single values those of the
        working copy; a delta of another form: False, and the whole publish decides."""
        if self.shape(delta, True) != 0 or not self.same_levels(delta, self.image_field(working, W_FEATURES)):
            return False
        return _equal(<object>ml_slot(delta, self.d_off[NEXT_PRODUCER_ID]),
                      self.image_field(working, W_NEXT_PRODUCER_ID))

    cdef int forget_deleted(self, object delta) except -1:
        """The kept topic deltas of the topics ``delta`` deletes dropped (their images go from the working copy)."""
        cdef PyObject *deleted = ml_slot(delta, self.d_off[DELETED_TOPICS]) if type(delta) is self.delta_cls else NULL
        if self.kept and deleted is not NULL and type(<object>deleted) is set:
            for tid in <set>deleted:
                self.kept.pop(tid, None)
        return 0

    cdef int subscribe(self, object on_publish) except -1:
        """``on_publish``'s C entry looked up (once per subscriber: a loader's ``on_publish`` may be replaced)."""
        capsule = getattr(on_publish, "c_on_publish", None)
        self.subscriber = on_publish
        self.c_subscriber = NULL
        if capsule is not None and PyCapsule_IsValid(capsule, ML_ON_PUBLISH_NAME):
            self.c_subscriber = <ml_on_publish *>PyCapsule_GetPointer(capsule, ML_ON_PUBLISH_NAME)
        return 0

    cdef bint apply_to(self, object delta, object working) except -1:
        """``delta.apply_to(working)`` then ``delta.clear()``, unless the delta changes the features or is of another
        form (False, and nothing done: the pure methods do it). Only the maps and sets that hold something are
        touched (``shape``, read again after the subscriber was told)."""
        cdef Py_ssize_t i
        cdef dict changes
        cdef int mask = self.shape(delta, False)
        if mask < 0 or mask & (1 << FEATURES) or not self.same_levels(delta, self.image_field(working, W_FEATURES)):
            return False
        ml_set_slot(working, self.w_off[W_OFFSET], <object>ml_slot(delta, self.d_off[OFFSET]))  # (set_working; the
        ml_set_slot(working, self.w_off[W_NEXT_PRODUCER_ID],  # features are the same)
                    <object>ml_slot(delta, self.d_off[NEXT_PRODUCER_ID]))
        for i in range(N_MAPS):
            if mask & (1 << (FIRST_MAP + i)):
                changes = <dict>ml_slot(delta, self.d_off[FIRST_MAP + i])
                _overlay_in_place(self.image_field(working, W_FIRST_MAP + i), changes)
                PyDict_Clear(changes)
        if mask & ((1 << TOPICS) | (1 << DELETED_TOPICS)):
            topics = <dict>ml_slot(delta, self.d_off[TOPICS])
            deleted = <set>ml_slot(delta, self.d_off[DELETED_TOPICS])
            self.merge_topics(topics, deleted, self.image_field(working, W_TOPICS),
                              self.image_field(working, W_TOPICS_BY_NAME))
            PyDict_Clear(topics)
            if mask & (1 << DELETED_TOPICS):
                deleted.clear()
        if mask & ((1 << CONFIGS) | (1 << CLEARED_CONFIGS)):
            configs = <dict>ml_slot(delta, self.d_off[CONFIGS])
            cleared = <set>ml_slot(delta, self.d_off[CLEARED_CONFIGS])
            working_configs = <dict?>self.image_field(working, W_CONFIGS)
            for resource in cleared:
                working_configs.pop(resource, None)
            _merge_maps(working_configs, configs)
            PyDict_Clear(configs)
            cleared.clear()
        if mask & (1 << CLIENT_QUOTAS):
            quotas = <dict>ml_slot(delta, self.d_off[CLIENT_QUOTAS])
            _merge_maps(self.image_field(working, W_CLIENT_QUOTAS), quotas)
            PyDict_Clear(quotas)
        return True

    cdef bint same_levels(self, object delta, object features) except -1:
        """The delta's metadata.version and ZK migration state are those of ``features`` (the working copy's): with
        no feature changed (``shape``), ``MetadataDelta.new_features`` would return the image's."""
        if features is not self.features:
            self.metadata_version = features.metadata_version
            self.zk_migration_state = features.zk_migration_state
            self.features = features
        return (_equal(<object>ml_slot(delta, self.d_off[METADATA_VERSION]), self.metadata_version)
                and _equal(<object>ml_slot(delta, self.d_off[ZK_MIGRATION_STATE]), self.zk_migration_state))

    cdef int merge_topics(self, dict changed, set deleted, dict topics, dict by_name) except -1:
        """``MetadataDelta._merge_topics``: the deleted topics out, each changed topic's partitions updated in its
        own TopicImage (the working copy's), a new or re-created topic given a TopicImage of its own. A changed
        topic's delta is kept for the next delta (``keep``)."""
        cdef Py_ssize_t pos = 0, refs
        cdef PyObject *key
        cdef PyObject *value
        cdef PyObject *held
        for tid in deleted:
            gone = topics.pop(tid, None)
            if gone is not None:
                gone_name = self.topic_field(gone, TI_NAME)
                if by_name.get(gone_name) is gone:
                    del by_name[gone_name]
            if self.kept:
                self.kept.pop(tid, None)
        while PyDict_Next(changed, &pos, &key, &value):
            refs = ml_refs(value)  # (before this loop holds it too)
            tid, topic = <object>key, <object>value
            if type(topic) is not self.topic_delta_cls:
                raise TypeError(f"a topic's delta is a {type(topic).__name__}")
            name = <object>ml_slot(topic, self.t_off[T_NAME])
            partitions = <object>ml_slot(topic, self.t_off[T_PARTITIONS])
            held = PyDict_GetItemWithError(topics, tid)  # (borrowed)
            old = None if held is NULL else <object>held
            if old is not None and <object>ml_slot(topic, self.t_off[T_BASE]) is old:
                self.merge_partitions(<dict?>self.topic_field(old, TI_PARTITIONS), partitions)
                if PyDict_GetItemWithError(by_name, name) is not held:  # (as apply() names the changed topic)
                    PyDict_SetItem(by_name, name, old)
                if self.kept is not None:
                    self.keep(key, value, refs, partitions)
                continue
            if old is not None:
                old_name = self.topic_field(old, TI_NAME)
                if by_name.get(old_name) is old:
                    del by_name[old_name]
            if self.kept:  # (a re-created topic: the kept delta is over the image that goes)
                self.kept.pop(tid, None)
            new = self.topic_image_cls(name, tid, dict(partitions))
            PyDict_SetItem(topics, tid, new)
            PyDict_SetItem(by_name, name, new)
        return 0

    cdef int merge_partitions(self, dict target, object changes) except -1:
        """``target.update(changes)``: a topic's changed registrations in its TopicImage of the working copy. Each
        registration they replace there that nothing else holds (reference count 1: no image, delta, subscriber or
        caller) goes to the loader's ``spare_registrations`` (up to ``MAX_SPARE_REGISTRATIONS``) instead of being
        freed, for the value replay's twin to fill again as the next delta's copy of a registration
        (``ValueReplay.registration_to_fill``): fewer registrations made and freed per publish."""
        cdef Py_ssize_t pos = 0
        cdef PyObject *key
        cdef PyObject *value
        cdef PyObject *held
        if self.spares is None or type(changes) is not dict:
            PyDict_Update(target, changes)
            return 0
        while PyDict_Next(changes, &pos, &key, &value):
            held = PyDict_GetItemWithError(target, <object>key)  # (borrowed; no error state saved per call)
            if (held is not NULL and ml_refs(held) == 1 and type(<object>held) is self.registration
                    and PyList_GET_SIZE(self.spares) < MAX_SPARE_REGISTRATIONS):
                self.spares.append(<object>held)
            PyDict_SetItem(target, <object>key, <object>value)
        return 0

    cdef int keep(self, PyObject *tid, PyObject *topic, Py_ssize_t refs, object partitions) except -1:
        """The topic's delta ``topic`` (``refs`` references: the delta's own, and the loader's ``kept_topic_deltas``'
        where that holds it), its changes now in the working copy, kept there emptied, for the value replay's twin
        to take again when the next delta changes the topic (``ValueReplay.kept_topic_delta``): no TopicDelta made
        and freed per topic per publish. One that something else holds (a subscriber that kept it) is left as it
        is and no longer kept: it never changes."""
        cdef PyObject *held = PyDict_GetItemWithError(self.kept, <object>tid)  # (borrowed)
        if type(partitions) is not dict:
            return 0
        if refs == 1 or (refs == 2 and held == topic):
            if held != topic:
                PyDict_SetItem(self.kept, <object>tid, <object>topic)
            PyDict_Clear(partitions)
        elif held == topic:
            del self.kept[<object>tid]
        return 0


cdef inline bint _equal(object a, object b) except -1:
    """``a == b`` as the pure methods compare single values (an object is equal to itself, as in a container)."""
    return a is b or PyObject_RichCompareBool(a, b, Py_EQ)


cdef int _overlay_in_place(dict target, dict changes) except -1:
    """``delta._overlay_in_place``: ``changes`` made in ``target``; a None change removes the key."""
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    while PyDict_Next(changes, &pos, &key, &value):
        if value is <PyObject *>None:
            target.pop(<object>key, None)
        else:
            PyDict_SetItem(target, <object>key, <object>value)
    return 0


cdef int _merge_maps(dict target, dict changes) except -1:
    """``delta._merge_configs``' and ``_merge_quotas``' loop: each entity's changes over its map in ``target`` make a
    new map (a config map is never changed in place); a map left empty goes."""
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef dict merged
    while PyDict_Next(changes, &pos, &key, &value):
        base = target.get(<object>key)
        if not <dict?>(<object>value):  # (delta._overlay: the base itself)
            if base:
                PyDict_SetItem(target, <object>key, base)
            else:
                target.pop(<object>key, None)
            continue
        if base is None:
            merged = {}
        else:  # (a copy: the map itself may be an image's too)
            merged = PyDict_Copy(base) if type(base) is dict else dict(base)
        _overlay_in_place(merged, <dict>value)
        if merged:
            PyDict_SetItem(target, <object>key, merged)
        else:
            target.pop(<object>key, None)
    return 0


cdef Py_ssize_t _offset(cls, name) except -1:
    """The offset of the slot ``name`` in instances of ``cls`` (a member descriptor of its own)."""
    cdef Py_ssize_t off = ml_member_offset(cls.__dict__.get(name))
    if off <= 0:
        raise TypeError(f"{cls.__name__}.{name} is not a slot")
    return off
