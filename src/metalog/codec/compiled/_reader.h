/* C helpers of metalog's compiled readers (the generated .pyx modules beside this file).
 *
 * Byte loads are big-endian and unchecked: the generated code compares every length with what
 * remains of the input before it calls them. Functions returning PyObject * return a new reference,
 * or NULL with an exception set. Nothing here allocates more than the input it reads can justify.
 */
#ifndef METALOG_READER_H
#define METALOG_READER_H

#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* The helpers are small and called from long generated functions, where a compiler may decline to inline. */
#if defined(__GNUC__) || defined(__clang__)
#define ML_INLINE static inline __attribute__((always_inline))
#else
#define ML_INLINE static inline
#endif

#ifndef METALOG_CYTHON_VERSION
#define METALOG_CYTHON_VERSION "unknown"
#endif

/* A reader's state: the input, and the containers it made. Those are kept out of the cycle collector until
 * the read is over (ml_keep / ml_finish): a collection that runs while a message is half built would
 * otherwise walk, and promote to an older generation, every list and struct made so far (for a 12 KB
 * UpdateMetadataRequest that walking was a quarter of the decode). Nothing else can reach them meanwhile. */
#define ML_LOCAL 48
typedef struct {
    const unsigned char *p;
    Py_ssize_t pos;
    Py_ssize_t end;
    PyObject *into;  /* borrowed, or NULL: an instance ml_new fills again rather than make one (ml_start_into) */
    int tuples;  /* arrays of fixed-width values made as tuples rather than lists (ml_start_into) */
    PyObject **made;  /* new references, untracked, of every list and struct made */
    Py_ssize_t nmade;
    Py_ssize_t cap;
    PyObject *local[ML_LOCAL];
} ml_reader;

static int ml_direct = 0;

static inline void ml_start(ml_reader *r, const unsigned char *p, Py_ssize_t pos, Py_ssize_t end) {
    r->p = p;
    r->pos = pos;
    r->end = end;
    r->into = NULL;
    r->tuples = 0;
    r->made = r->local;
    r->nmade = 0;
    r->cap = ML_LOCAL;
}

/* ml_start for a caller that takes the values out of the message read and keeps nothing else of it (the compiled
 * replay's own rules): the message's object is ``into`` again where that is an instance of the class read that only
 * the caller holds (its every field is set by the read), and arrays of fixed-width values are tuples. */
static inline void ml_start_into(ml_reader *r, PyObject *into, const unsigned char *p, Py_ssize_t pos,
                                 Py_ssize_t end) {
    ml_start(r, p, pos, end);
    r->into = into;
    r->tuples = 1;
}

/* Keep the new container o (a new reference, or NULL: passed on) out of the collector until ml_finish. */
static PyObject *ml_grow(ml_reader *r, PyObject *o);

/* The same for a container made untracked (ml_new's instances). */
ML_INLINE PyObject *ml_hold(ml_reader *r, PyObject *o) {
    if (o == NULL) return NULL;
    if (r->nmade == r->cap && ml_grow(r, o) == NULL) return NULL;
    Py_INCREF(o);
    r->made[r->nmade++] = o;
    return o;
}

ML_INLINE PyObject *ml_keep(ml_reader *r, PyObject *o) {
    if (o == NULL || !ml_direct) return o;
    if (r->nmade == r->cap && ml_grow(r, o) == NULL) return NULL;
    PyObject_GC_UnTrack(o);
    Py_INCREF(o);
    r->made[r->nmade++] = o;
    return o;
}

/* Room for more kept containers; on failure o (a new reference) is let go and NULL returned. */
static PyObject *ml_grow(ml_reader *r, PyObject *o) {
    {
        Py_ssize_t cap = r->cap * 2;
        PyObject **more = PyMem_New(PyObject *, cap);
        if (more == NULL) {
            Py_DECREF(o);
            PyErr_NoMemory();
            return NULL;
        }
        memcpy(more, r->made, sizeof(PyObject *) * r->nmade);
        if (r->made != r->local) PyMem_Free(r->made);
        r->made = more;
        r->cap = cap;
    }
    return o;
}

/* The read is over: hand its containers to the collector (ok) or let them go (an error: they die untracked). */
static inline void ml_finish(ml_reader *r, int ok) {
    Py_ssize_t i;
    for (i = 0; i < r->nmade; i++) {
        PyObject *o = r->made[i];
        if (ok && !PyObject_GC_IsTracked(o)) PyObject_GC_Track(o);
        Py_DECREF(o);
    }
    r->nmade = 0;
    if (r->made != r->local) PyMem_Free(r->made);
    r->made = r->local;
}

/* The offset of the k-th slot (in CPython's slot order) of a class whose bases have no slots. */
#define ML_SLOT(k) ((Py_ssize_t)(sizeof(PyObject) + (size_t)(k) * sizeof(PyObject *)))

static inline uint16_t ml_u16(const unsigned char *p) { return (uint16_t)(((unsigned)p[0] << 8) | p[1]); }
static inline uint32_t ml_u32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t ml_u64(const unsigned char *p) { return ((uint64_t)ml_u32(p) << 32) | ml_u32(p + 4); }
static inline int16_t ml_i16(const unsigned char *p) { return (int16_t)ml_u16(p); }
static inline int32_t ml_i32(const unsigned char *p) { return (int32_t)ml_u32(p); }
static inline int64_t ml_i64(const unsigned char *p) { return (int64_t)ml_u64(p); }

/* An unsigned varint of at most 5 bytes that fits 32 bits (Kafka's readUnsignedVarint), or -1. */
ML_INLINE int64_t ml_uvarint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos) {
    Py_ssize_t at = *pos;
    uint64_t value = 0;
    int shift;
    if (at < end && p[at] < 0x80) {
        *pos = at + 1;
        return p[at];
    }
    for (shift = 0; shift <= 28; shift += 7) {
        unsigned b;
        if (at >= end) return -1;
        b = p[at++];
        value |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (value > 0xFFFFFFFFu) return -1;
            *pos = at;
            return (int64_t)value;
        }
    }
    return -1;
}

/* ---- Python values ------------------------------------------------------------------------- */
/* CPython's own small ints (-5..256), looked up without a call: most ids, epochs and counts are small. */
static PyObject *ml_small[262];

static inline int ml_init_small(void) {
    int i;
    for (i = 0; i < 262; i++) {
        if (ml_small[i] == NULL && (ml_small[i] = PyLong_FromLong(i - 5)) == NULL) return -1;
    }
    return 0;
}

ML_INLINE PyObject *ml_long(long v) {
    if ((unsigned long)(v + 5) < 262) {
        PyObject *o = ml_small[v + 5];
        Py_INCREF(o);
        return o;
    }
    return PyLong_FromLong(v);
}

ML_INLINE PyObject *ml_obj_bool(const unsigned char *p) { return PyBool_FromLong(p[0] != 0); }
ML_INLINE PyObject *ml_obj_i8(const unsigned char *p) { return ml_long((int8_t)p[0]); }
ML_INLINE PyObject *ml_obj_i16(const unsigned char *p) { return ml_long(ml_i16(p)); }
ML_INLINE PyObject *ml_obj_u16(const unsigned char *p) { return ml_long(ml_u16(p)); }
ML_INLINE PyObject *ml_obj_i32(const unsigned char *p) { return ml_long(ml_i32(p)); }
ML_INLINE PyObject *ml_obj_u32(const unsigned char *p) { return PyLong_FromUnsignedLong(ml_u32(p)); }
ML_INLINE PyObject *ml_obj_i64(const unsigned char *p) { return PyLong_FromLongLong(ml_i64(p)); }
static inline PyObject *ml_obj_f64(const unsigned char *p) {
    uint64_t u = ml_u64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return PyFloat_FromDouble(d);
}
static inline PyObject *ml_obj_str(const unsigned char *p, Py_ssize_t n) {
    return PyUnicode_DecodeUTF8((const char *)p, n, NULL);  /* strict, as bytes.decode() */
}
static inline PyObject *ml_obj_bytes(const unsigned char *p, Py_ssize_t n) {
    return PyBytes_FromStringAndSize((const char *)p, n);
}

/* Ids repeat from record to record: a small direct-mapped cache of Uuid objects keyed by their 16 bytes
 * saves making one (and the pure path's dict lookup) for an id seen before. A miss asks the pure path's
 * maker (seen_uuid(raw) or uuid_of(raw)), so both paths share their Uuid objects. Bounded: ML_UUID_SLOTS. */
#define ML_UUID_BITS 11
#define ML_UUID_SLOTS (1 << ML_UUID_BITS)
static PyObject *ml_uuid_table[ML_UUID_SLOTS];
static PyObject *ml_uuid_maker = NULL;

static inline int ml_set_uuid_maker(PyObject *maker) {
    Py_INCREF(maker);
    Py_XSETREF(ml_uuid_maker, maker);
    return 0;
}

static inline PyObject *ml_obj_uuid(const unsigned char *p) {
    uint64_t a, b, h;
    PyObject *u, *raw;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    h = (a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    h = h >> (64 - ML_UUID_BITS);
    u = ml_uuid_table[h];
    if (u != NULL && memcmp(PyBytes_AS_STRING(u), p, 16) == 0) {
        Py_INCREF(u);
        return u;
    }
    raw = PyBytes_FromStringAndSize((const char *)p, 16);
    if (raw == NULL) return NULL;
    u = PyObject_CallOneArg(ml_uuid_maker, raw);
    Py_DECREF(raw);
    if (u == NULL) return NULL;
    if (PyBytes_Check(u) && PyBytes_GET_SIZE(u) == 16) {
        Py_INCREF(u);
        Py_XSETREF(ml_uuid_table[h], u);
    }
    return u;
}

/* ---- lists of fixed-width values (n was checked against the input) -------------------------- */
/* The fixed-width types read as arrays, each as (name, size, make): ML_FIXED_WIDTH(M) writes M's reader of each. */
#define ML_FIXED_WIDTH(M) \
    M(bool, 1, ml_obj_bool) \
    M(i8, 1, ml_obj_i8) \
    M(i16, 2, ml_obj_i16) \
    M(u16, 2, ml_obj_u16) \
    M(i32, 4, ml_obj_i32) \
    M(u32, 4, ml_obj_u32) \
    M(i64, 8, ml_obj_i64) \
    M(f64, 8, ml_obj_f64) \
    M(uuid, 16, ml_obj_uuid)

/* Returns ``container`` (a new tuple or list, or NULL) filled with n values of ``size`` bytes each (``make``),
 * through its SET_ITEM; NULL, the container released, where a value can't be made. */
#define ML_FILLED(container, set_item, size, make, p, n) do {                      \
        Py_ssize_t i_;                                                              \
        PyObject *v_, *c_ = (container);                                            \
        if (c_ == NULL) return NULL;                                                \
        for (i_ = 0; i_ < (n); i_++, (p) += (size)) {                               \
            v_ = make(p);                                                           \
            if (v_ == NULL) {                                                       \
                Py_DECREF(c_);                                                      \
                return NULL;                                                        \
            }                                                                       \
            set_item(c_, i_, v_);                                                   \
        }                                                                           \
        return c_;                                                                  \
    } while (0)

/* The same values as a tuple (ml_start_into's readers); left to the collector, as any tuple. */
#define ML_TUPLE(name, size, make)                                                  \
    static inline PyObject *ml_tuple_##name(const unsigned char *p, Py_ssize_t n) { \
        ML_FILLED(PyTuple_New(n), PyTuple_SET_ITEM, size, make, p, n);              \
    }
ML_FIXED_WIDTH(ML_TUPLE)

#define ML_LIST(name, size, make)                                                 \
    static inline PyObject *ml_list_##name(ml_reader *r, const unsigned char *p,  \
                                           Py_ssize_t n) {                        \
        if (r->tuples) return ml_tuple_##name(p, n);                              \
        ML_FILLED(ml_keep(r, PyList_New(n)), PyList_SET_ITEM, size, make, p, n);  \
    }
ML_FIXED_WIDTH(ML_LIST)

/* ---- objects of the generated classes ----------------------------------------------------------
 * ml_direct (set at import, when every class's slot layout is the one the generator expects, on
 * CPython only) stores straight into the instance's slots; otherwise the portable path: object.__new__
 * and setattr through the slot descriptors. */
static PyObject *ml_object_new = NULL;  /* object.__new__ */

static inline int ml_set_object_new(PyObject *f) {
    Py_INCREF(f);
    Py_XSETREF(ml_object_new, f);
    return 0;
}

/* An instance of cls with every slot empty: what PyType_GenericAlloc (cls's tp_alloc, checked at import) makes,
 * only not yet tracked by the collector (ml_finish tracks it). */
ML_INLINE PyObject *ml_new(ml_reader *r, PyObject *cls) {
    if (ml_direct) {
        PyTypeObject *tp = (PyTypeObject *)cls;
        PyObject *o = r->into;
        if (o != NULL && Py_TYPE(o) == tp && Py_REFCNT(o) == 1) {  /* ml_start_into's: filled again, once */
            r->into = NULL;
            Py_INCREF(o);
            return o;
        }
        o = PyObject_GC_New(PyObject, tp);
        if (o == NULL) return NULL;
        memset((char *)o + sizeof(PyObject), 0, (size_t)tp->tp_basicsize - sizeof(PyObject));
        return ml_hold(r, o);
    }
    return PyObject_CallOneArg(ml_object_new, cls);
}

/* A list of n items, each set by the reader before the read is over (n was checked against the input). */
ML_INLINE PyObject *ml_list(ml_reader *r, Py_ssize_t n) { return ml_keep(r, PyList_New(n)); }

/* Store v (borrowed) in o's slot at off (direct) or as attribute name (portable). */
ML_INLINE int ml_put(PyObject *o, Py_ssize_t off, PyObject *name, PyObject *v) {
    if (ml_direct) {
        PyObject **slot = (PyObject **)((char *)o + off);
        PyObject *old = *slot;
        Py_INCREF(v);
        *slot = v;
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(o, name, v);
}

/* The same with a new reference, which it takes over; NULL (an error) is passed on as -1. */
ML_INLINE int ml_put_new(PyObject *o, Py_ssize_t off, PyObject *name, PyObject *v) {
    int r;
    if (v == NULL) return -1;
    if (ml_direct) {
        PyObject **slot = (PyObject **)((char *)o + off);
        PyObject *old = *slot;
        *slot = v;
        Py_XDECREF(old);
        return 0;
    }
    r = PyObject_SetAttr(o, name, v);
    Py_DECREF(v);
    return r;
}

/* Item i of a list made by PyList_New: v borrowed / v a new reference taken over. */
ML_INLINE void ml_set_item(PyObject *list, Py_ssize_t i, PyObject *v) {
    Py_INCREF(v);
    PyList_SET_ITEM(list, i, v);
}
ML_INLINE int ml_set_item_new(PyObject *list, Py_ssize_t i, PyObject *v) {
    if (v == NULL) return -1;
    PyList_SET_ITEM(list, i, v);
    return 0;
}

/* An object's slot at an offset ml_member_offset gave: its value (borrowed; NULL when unset), or set to v (a new
 * reference taken; the old value, if any, released). For the compiled twins that read and write another layer's
 * slotted objects (metalog.state.compiled). */
static inline PyObject *ml_slot(PyObject *o, Py_ssize_t off) { return *(PyObject **)((char *)o + off); }
static inline void ml_set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject **at = (PyObject **)((char *)o + off);
    PyObject *old = *at;
    Py_INCREF(v);
    *at = v;
    Py_XDECREF(old);
}
/* An object's reference count, read from a borrowed pointer (such as ml_slot's or a dict's borrowed item): 1 where
 * only its holder holds it, so that the twins may reuse it in place. */
static inline Py_ssize_t ml_refs(PyObject *o) { return Py_REFCNT(o); }

/* What a slot descriptor says about its slot: its offset, or -1 if it is not a plain object slot. */
static inline Py_ssize_t ml_member_offset(PyObject *descr) {
    PyMemberDef *m;
    if (Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
    m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return -1;
    return m->offset;
}

static inline int ml_generic_alloc(PyObject *cls) {
    return ((PyTypeObject *)cls)->tp_alloc == PyType_GenericAlloc;
}

#endif
