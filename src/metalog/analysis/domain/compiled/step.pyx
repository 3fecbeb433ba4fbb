# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled twin of ``metalog.analysis.domain.step.ClusterStep``: hand-written.

The same counts, kept from the same deltas by the same rules, and the same rows, in the same order (the module
``step`` is the specification: read it first). Counts live in C arrays by broker, directory and (broker, directory)
number; a batch's timeline row is 20 int64 appended to a buffer, broker_timeline and directory_timeline rows the
same, events and directory failures (rare) Python tuples. ``take`` makes the columns (``array('q')``) from the
buffers. Registrations, directory ids and names stay Python objects, read through their attributes.
``tests/analysis/domain/test_compiled_step.py`` runs both twins on random histories in random batch shapes.
"""

from cpython.array cimport array, clone
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.object cimport PyObject
from libc.stdint cimport int64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset

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
cdef int64_t NO_LEADER = -1
cdef int LOST_DIR = 2, ASSIGNED = 3
cdef int PHASE_NATIVE = 0, PHASE_PRE = 1, PHASE_HYBRID = 2, PHASE_DUAL = 3, PHASE_POST = 4
cdef int NOT_STARTED = 0, IN_PROGRESS = 1, COMPLETE = 2
cdef int UNREGISTERED = 0, FENCED = 1, UNFENCED = 2
cdef int PHASE_CHANGE = 0, DIR_TRANSITION = 1, METADATA_VERSION = 2, DIRECTORY_FAILURE = 3, ABORTED = 4
cdef int CONTROLLER_LEADER = 5


cdef struct Buffer:  # a growable int64 buffer
    int64_t *data
    Py_ssize_t size
    Py_ssize_t cap


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


cdef inline int64_t *push(Buffer *b, Py_ssize_t n) except NULL:
    """``n`` more values at the end: a pointer to them (zeroed)."""
    grow(b, n)
    cdef int64_t *at = b.data + b.size
    b.size += n
    return at


cdef inline int codes_differ(int64_t *a, int64_t *b, int n):
    cdef int i
    for i in range(n):
        if a[i] != b[i]:
            return 1
    return 0


cdef class ClusterStep:
    """``metalog.analysis.domain.step.ClusterStep``, compiled (see the module's docstring)."""

    cdef public str cluster
    cdef object image_of
    # brokers by number
    cdef dict bnum
    cdef list bid, reg, bpairs
    cdef Buffer bkind, blead, boff, bshown, bdirty
    cdef Buffer dirty_b  # broker numbers whose values may have changed since the last batch
    # directories by number: the placeholders are 0, 1, 2
    cdef dict dnum
    cdef list dirs, dname
    # (broker, directory) pairs by number
    cdef dict pnum
    cdef Buffer pb, pd, prep, plead, pless, pshown, pdirty, dirty_p
    # the counts
    cdef int64_t mv, zk, topics, partitions, offline_partitions, imbalance, offline
    cdef int64_t kinds[4]
    cdef int64_t fenced, registered, shutdown, brokers_zk, with_dirs
    cdef int64_t prev[3]
    cdef bint has_prev
    # rows since the last take
    cdef Buffer timeline, brokers_rows, dir_rows
    cdef list failed, events, lost, told

    def __init__(self, str cluster, image, image_of, *, bint log_start=True):
        cdef Py_ssize_t b, p
        self.cluster = cluster
        self.image_of = image_of
        self.bnum, self.bid, self.reg, self.bpairs = {}, [], [], []
        self.dnum, self.dirs, self.dname = {}, [], []
        self.pnum = {}
        self.failed, self.events, self.lost, self.told = [], [], [], []
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
        free(self.bkind.data)
        free(self.blead.data)
        free(self.boff.data)
        free(self.bshown.data)
        free(self.bdirty.data)
        free(self.dirty_b.data)
        free(self.pb.data)
        free(self.pd.data)
        free(self.prep.data)
        free(self.plead.data)
        free(self.pless.data)
        free(self.pshown.data)
        free(self.pdirty.data)
        free(self.dirty_p.data)
        free(self.timeline.data)
        free(self.brokers_rows.data)
        free(self.dir_rows.data)

    # ---- numbering ----------------------------------------------------------------------------------------------
    cdef Py_ssize_t _broker(self, object bid) except -1:
        cdef PyObject *found = PyDict_GetItem(self.bnum, bid)
        cdef Py_ssize_t b
        if found is not NULL:
            return <Py_ssize_t><object>found
        b = len(self.bid)
        self.bnum[bid] = b
        self.bid.append(bid)
        self.reg.append(None)
        self.bpairs.append([])
        push(&self.bkind, 4)
        push(&self.blead, 1)
        push(&self.boff, 1)
        push(&self.bshown, BROKER_VALUES)
        push(&self.bdirty, 1)
        return b

    cdef Py_ssize_t _directory(self, object directory) except -1:
        cdef PyObject *found = PyDict_GetItem(self.dnum, directory)
        cdef Py_ssize_t d
        if found is not NULL:
            return <Py_ssize_t><object>found
        d = len(self.dirs)
        self.dnum[directory] = d
        self.dirs.append(directory)
        self.dname.append(str(directory))
        return d

    cdef Py_ssize_t _pair(self, Py_ssize_t b, Py_ssize_t d) except -1:
        key = (<int64_t>b << 32) | d
        cdef PyObject *found = PyDict_GetItem(self.pnum, key)
        cdef Py_ssize_t p
        if found is not NULL:
            return <Py_ssize_t><object>found
        p = self.pb.size
        self.pnum[key] = p
        push(&self.pb, 1)[0] = b
        push(&self.pd, 1)[0] = d
        push(&self.prep, 1)
        push(&self.plead, 1)
        push(&self.pless, 1)
        push(&self.pshown, PAIR_VALUES)
        push(&self.pdirty, 1)
        (<list>self.bpairs[b]).append(p)
        return p

    cdef inline void _dirty_broker(self, Py_ssize_t b) except *:
        if not self.bdirty.data[b]:
            self.bdirty.data[b] = 1
            push(&self.dirty_b, 1)[0] = b

    cdef inline void _dirty_pair(self, Py_ssize_t p) except *:
        if not self.pdirty.data[p]:
            self.pdirty.data[p] = 1
            push(&self.dirty_p, 1)[0] = p

    # ---- the counts ---------------------------------------------------------------------------------------------
    cdef void _zero_counts(self) except *:
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
            self.reg[i] = None

    cdef void _count(self, image) except *:
        features = image.features
        self.mv = features.metadata_version or 0
        self.zk = features.zk_migration_state
        for bid, reg in image.brokers.items():
            self._broker_change(bid, None, reg)
        self.topics = len(image.topics)
        for topic in image.topics.values():
            for part in (<dict>topic.partitions).values():
                self._partition(<tuple>part, 1)

    def published(self, delta, image):
        """``MetadataLoader.on_publish`` of a loader with ``images=False``."""
        cdef Py_ssize_t pos = 0, pos2
        cdef PyObject *key
        cdef PyObject *value
        cdef PyObject *found
        cdef list added
        cdef dict old_topics, base, changed, old_brokers
        cdef tuple old, new
        if delta is None:
            self._replace(image)
            return
        before = delta.image
        self.mv = delta.metadata_version or 0
        self.zk = delta.zk_migration_state
        old_topics = before.topics
        deleted = delta.deleted_topics
        if deleted:
            for tid in deleted:
                gone = old_topics.get(tid)
                if gone is not None:
                    self.topics -= 1
                    for part in (<dict>gone.partitions).values():
                        self._partition(<tuple>part, -1)
        added = None
        topics = <dict>delta.topics
        while PyDict_Next(topics, &pos, &key, &value):
            topic = <object>value
            if topic.base is None:  # new, or removed and created again
                gone = old_topics.get(<object>key)
                if gone is None:
                    self.topics += 1
                else:
                    for part in (<dict>gone.partitions).values():
                        self._partition(<tuple>part, -1)
                if added is None:
                    added = []
                added.extend((<dict>topic.partitions).values())
                continue
            base = topic.base_partitions
            changed = topic.partitions
            pos2 = 0
            while PyDict_Next(changed, &pos2, &key, &value):
                new = <tuple>value
                found = PyDict_GetItem(base, <object>key)
                if found is not NULL:
                    old = <tuple>found
                    if self._same_counts(old, new):
                        continue  # an ISR change: the same counts
                    if self._leader_moved(old, new):
                        continue
                    self._partition(old, -1)
                if added is None:
                    added = []
                added.append(new)
        brokers = <dict>delta.brokers
        if brokers:
            old_brokers = before.brokers
            for bid, reg in brokers.items():
                old_reg = old_brokers.get(bid)
                if old_reg is not reg:
                    self._broker_change(bid, old_reg, reg)
        if added is not None:
            for part in added:
                self._partition(<tuple>part, 1)

    cdef inline bint _same_counts(self, tuple old, tuple new) except -1:
        """Leader, replicas and directories equal: the partition's counts are the same."""
        return _same(old[7], new[7]) and _same(old[0], new[0]) and _same(old[1], new[1])

    cdef bint _leader_moved(self, tuple old, tuple new) except -1:
        """A new leader among the same replicas in the same directories, neither leader nor leaderless changing
        to the other: only the two leaders' counts and the imbalance move (most leader changes)."""
        cdef int64_t was = old[7]
        cdef int64_t now = new[7]
        cdef tuple replicas, directories
        cdef Py_ssize_t i, n, b, p
        cdef int64_t r, preferred
        if was == NO_LEADER or now == NO_LEADER:
            return False
        if not (_same(old[0], new[0]) and _same(old[1], new[1])):
            return False
        replicas = <tuple>new[0]
        directories = <tuple>new[1]
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

    cdef void _replace(self, image) except *:
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

    cdef bint _offline(self, reg, Py_ssize_t d) except -1:
        if reg is None or reg.fenced:
            return True
        if d < LOST_DIR:
            return False
        if d == LOST_DIR:
            return True
        dirs = reg.directories
        return bool(dirs) and self.dirs[d] not in dirs

    cdef void _partition(self, tuple part, int sign) except *:
        cdef tuple replicas = <tuple>part[0]
        cdef tuple directories = <tuple>part[1]
        cdef int64_t leader = part[7]
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
            replica = replicas[i]
            b = self._broker(replica)
            d = self._directory(directories[i])
            p = self._pair(b, d)
            kind = d if d < ASSIGNED else ASSIGNED
            self.prep.data[p] += sign
            self.bkind.data[4 * b + kind] += sign
            self.kinds[kind] += sign
            if <int64_t>replica == leader:
                self.plead.data[p] += sign
                self.blead.data[b] += sign
            if leaderless:
                self.pless.data[p] += sign
            if self._offline(self.reg[b], d):
                self.boff.data[b] += sign
                self.offline += sign
            self._dirty_broker(b)
            self._dirty_pair(p)

    cdef void _broker_change(self, bid, old, new) except *:
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
        self.reg[b] = new
        for p in self.bpairs[b]:
            if self.prep.data[p] and self._offline(new, self.pd.data[p]):
                offline += self.prep.data[p]
        self.offline += offline - self.boff.data[b]
        self.boff.data[b] = offline
        self._dirty_broker(b)
        for p in self.bpairs[b]:
            self._dirty_pair(p)
        if old is not None and new is not None:
            self._lost_directories(old, new)

    cdef void _lost_directories(self, old, new) except *:
        if old is not new and old.epoch == new.epoch:
            now = new.directories
            for d in old.directories:
                if d not in now:
                    self.lost.append((new.id, d))

    # ---- events told as they come -------------------------------------------------------------------------------
    def aborted(self, abort):
        """``MetadataLoader.on_abort``."""
        self.told.append((abort.abort_offset, ABORTED, f"transaction begun at offset {abort.begin_offset} aborted"))

    def leader_change(self, offset, leader_id, epoch):
        self.told.append((offset, CONTROLLER_LEADER, f"controller {leader_id} leads in epoch {epoch}"))

    # ---- rows ---------------------------------------------------------------------------------------------------
    cdef inline void _codes(self, int64_t *out):
        out[0] = self.mv
        out[1] = _phase(self.zk, self.brokers_zk)
        out[2] = _transition(self.with_dirs, self.registered, self.kinds[0], self.kinds[1])

    def batch(self, int64_t last_offset, int64_t timestamp, bint open_transaction):
        cdef int64_t codes[3]
        cdef int64_t *row
        cdef int64_t *prev
        cdef int64_t start[3]
        self._codes(codes)
        row = push(&self.timeline, TIMELINE_WIDTH)
        row[0], row[1], row[2], row[3], row[4], row[5] = last_offset, timestamp, codes[0], self.zk, codes[1], codes[2]
        row[6], row[7], row[8], row[9] = self.fenced, self.registered - self.fenced, self.shutdown, self.brokers_zk
        row[10], row[11], row[12], row[13] = self.topics, self.partitions, self.offline_partitions, self.imbalance
        row[14], row[15], row[16], row[17] = self.kinds[0], self.kinds[1], self.kinds[2], self.kinds[3]
        row[18], row[19] = self.offline, open_transaction
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

    cdef void _failures(self, int64_t last_offset, int64_t timestamp) except *:
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

    cdef void _broker_values(self, Py_ssize_t b, int64_t *out) except *:
        reg = self.reg[b]
        cdef int i
        for i in range(4):
            out[4 + i] = self.bkind.data[4 * b + i]
        out[8], out[9] = self.boff.data[b], self.blead.data[b]
        if reg is None:
            out[0] = out[1] = out[2] = out[3] = 0
        else:
            out[0] = FENCED if reg.fenced else UNFENCED
            out[1], out[2] = <bint>reg.in_controlled_shutdown, <bint>reg.is_migrating_zk_broker
            out[3] = len(reg.directories)

    cdef void _pair_values(self, Py_ssize_t p, int64_t *out) except *:
        cdef Py_ssize_t d = self.pd.data[p]
        cdef int64_t replicas = self.prep.data[p]
        reg = self.reg[self.pb.data[p]]
        listed = reg is not None and self.dirs[d] in reg.directories
        if not replicas and not listed:
            out[0] = out[1] = out[2] = out[3] = out[4] = 0
            return
        out[0] = listed or (reg is not None and not reg.directories)
        out[1], out[2], out[4] = replicas, self.plead.data[p], self.pless.data[p]
        out[3] = replicas if self._offline(reg, d) else 0

    cdef void _changed_rows(self, int64_t last_offset, int64_t timestamp) except *:
        cdef int64_t values[BROKER_VALUES]
        cdef int64_t *shown
        cdef int64_t *row
        cdef Py_ssize_t i, b, p
        cdef list order
        bids = self.bid
        order = sorted([self.dirty_b.data[i] for i in range(self.dirty_b.size)], key=bids.__getitem__)
        for b in order:
            self.bdirty.data[b] = 0
            self._broker_values(b, values)
            shown = self.bshown.data + b * BROKER_VALUES
            if codes_differ(values, shown, BROKER_VALUES):
                row = push(&self.brokers_rows, BROKER_WIDTH)
                row[0], row[1], row[2] = last_offset, timestamp, <int64_t>bids[b]
                for i in range(BROKER_VALUES):
                    row[3 + i] = shown[i] = values[i]
        self.dirty_b.size = 0
        names = self.dname
        pb, pd = self.pb.data, self.pd.data
        order = []
        for i in range(self.dirty_p.size):
            p = self.dirty_p.data[i]
            self.pdirty.data[p] = 0
            if pd[p] > LOST_DIR:
                order.append((bids[pb[p]], names[pd[p]], p))
        order.sort()
        for _, _, p in order:
            self._pair_values(p, values)
            shown = self.pshown.data + p * PAIR_VALUES
            if codes_differ(values, shown, PAIR_VALUES):
                row = push(&self.dir_rows, DIRECTORY_WIDTH)
                row[0], row[1], row[2], row[3] = last_offset, timestamp, <int64_t>bids[pb[p]], pd[p]
                for i in range(PAIR_VALUES):
                    row[4 + i] = shown[i] = values[i]
        self.dirty_p.size = 0

    # ---- handing the rows over ----------------------------------------------------------------------------------
    @property
    def pending(self):
        return self.timeline.size // TIMELINE_WIDTH

    def take(self):
        cluster = self.cluster
        timeline = _columns(&self.timeline, TIMELINE_WIDTH)
        timeline[2:6] = [Coded(timeline[2], version_names(timeline[2])), Coded(timeline[3], ZK_NAMES),
                         Coded(timeline[4], PHASES), Coded(timeline[5], DIR_TRANSITIONS)]
        brokers = _columns(&self.brokers_rows, BROKER_WIDTH)
        brokers[3] = Coded(brokers[3], BROKER_STATES)
        directories = _columns(&self.dir_rows, DIRECTORY_WIDTH)
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


cdef list _columns(Buffer *rows, Py_ssize_t width):
    """The buffer's rows (``width`` values each) as a column each, and the buffer emptied."""
    cdef Py_ssize_t n = rows.size // width, i, j
    cdef list out = []
    cdef array column
    cdef int64_t *to
    for j in range(width):
        column = clone(INT64, n, False)
        to = <int64_t *>column.data.as_voidptr
        for i in range(n):
            to[i] = rows.data[i * width + j]
        out.append(column)
    rows.size = 0
    return out


cdef list _rows_columns(list rows, tuple kinds):
    """Python rows as columns: ``kinds`` per column False (int64), True (codes), None (text)."""
    cdef list out = []
    cdef Py_ssize_t j
    for j, kind in enumerate(kinds):
        values = [row[j] for row in rows]
        out.append(values if kind is None else array("q", values))
    return out
