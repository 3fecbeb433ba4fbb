/* C helpers of metalog's compiled log core (records.pyx, scan.pyx beside this file): hand-written.
 *
 * Every load is unchecked: the callers compare each length with what remains before they read. A function
 * that returns int returns 0 when the input is not in the form it reads; the caller then hands the whole
 * batch to the pure Python reader, which reads it or raises its own precise error.
 */
#ifndef METALOG_LOG_H
#define METALOG_LOG_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#ifndef METALOG_CYTHON_VERSION
#define METALOG_CYTHON_VERSION "unknown"
#endif

static inline int64_t ml_be64(const unsigned char *p) {
    return (int64_t)(((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) |
                     ((uint64_t)p[3] << 32) | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
                     ((uint64_t)p[6] << 8) | (uint64_t)p[7]);
}

static inline int32_t ml_be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static inline uint32_t ml_beu32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline int16_t ml_be16(const unsigned char *p) {
    return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

/* A zigzag varint of at most 5 bytes (Kafka's readVarint) at p[*pos], before end: 1 and the value in *out, or 0
 * where it runs past end or needs more than 32 bits (the pure reader then decides; it takes up to 35 bits). */
static inline int ml_varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int64_t *out) {
    Py_ssize_t i = *pos;
    uint64_t raw = 0;
    int shift;
    for (shift = 0; shift <= 28; shift += 7) {
        if (i >= end) return 0;
        unsigned char b = p[i++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (raw > 0xFFFFFFFFu) return 0;
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = i;
            return 1;
        }
    }
    return 0;
}

/* A zigzag varlong of at most 10 bytes (readVarlong), 0 where it does not fit 64 bits or runs past end. */
static inline int ml_varlong(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, int64_t *out) {
    Py_ssize_t i = *pos;
    uint64_t raw = 0;
    int shift;
    for (shift = 0; shift <= 63; shift += 7) {
        if (i >= end) return 0;
        unsigned char b = p[i++];
        if (shift == 63 && b > 1) return 0;
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = i;
            return 1;
        }
    }
    return 0;
}

static inline int ml_add_overflows(int64_t a, int64_t b, int64_t *out) {
    return __builtin_add_overflow(a, b, out);
}

/* A new instance of a tuple subclass (a NamedTuple: Record) of n items, its items to be set with
 * PyTuple_SET_ITEM: what tuple.__new__(cls, ...) allocates. */
static inline PyObject *ml_new_tuple_of(PyObject *cls, Py_ssize_t n) {
    return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, n);
}

/* A record tuple holds ints, bytes, None, str and tuples of those: it cannot be part of a reference cycle, so the
 * cycle collector need not walk it (CPython untracks only exact tuples by itself). */
static inline void ml_untrack(PyObject *o) {
    if (PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o);
}


/* ---- instances of a slotted class, their slots set directly ------------------------------------------------ */
#include <structmember.h>

/* The offset of a slot from its member descriptor, or -1 when it is not a plain object slot. */
static Py_ssize_t ml_member_offset(PyObject *descr) {
    if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    return m->type == T_OBJECT_EX ? m->offset : -1;
}

/* Whether instances of cls are made by PyType_GenericAlloc with every slot NULL (a plain slotted class). */
static int ml_generic_alloc(PyObject *cls) {
    PyTypeObject *t = (PyTypeObject *)cls;
    return t->tp_alloc == PyType_GenericAlloc && t->tp_dictoffset == 0 && t->tp_itemsize == 0;
}

/* An instance of cls with every slot empty, as object.__new__(cls) makes it for such a class. */
static inline PyObject *ml_alloc(PyObject *cls) {
    return ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
}

/* Set an empty slot (a new instance's) to v. */
static inline void ml_put_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject **slot = (PyObject **)((char *)o + off);
    Py_INCREF(v);
    Py_XSETREF(*slot, v);
}

/* ---- CRC-32C (Castagnoli), as Kafka's Crc32C: hardware where the CPU has SSE 4.2, else a table ------------ */
static uint32_t ml_crc_table[8][256];
static int ml_crc_hw = -1;

static void ml_crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        ml_crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            ml_crc_table[t][i] = (ml_crc_table[t - 1][i] >> 8) ^ ml_crc_table[0][ml_crc_table[t - 1][i] & 0xFF];
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    ml_crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
    ml_crc_hw = 0;
#endif
}

static uint32_t ml_crc_sw(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = ml_crc_table[7][lo & 0xFF] ^ ml_crc_table[6][(lo >> 8) & 0xFF] ^ ml_crc_table[5][(lo >> 16) & 0xFF] ^
            ml_crc_table[4][lo >> 24] ^ ml_crc_table[3][p[4]] ^ ml_crc_table[2][p[5]] ^ ml_crc_table[1][p[6]] ^
            ml_crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ ml_crc_table[0][(c ^ *p++) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t ml_crc_hw64(const unsigned char *p, Py_ssize_t n) {
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#define ML_HAVE_HW 1
#endif

/* The CRC-32C of p[0:n] (for a batch's attributes-to-end: small batches, where a call out costs more). */
static inline uint32_t ml_crc32c(const unsigned char *p, Py_ssize_t n) {
#ifdef ML_HAVE_HW
    if (ml_crc_hw) return ml_crc_hw64(p, n);
#endif
    return ml_crc_sw(p, n);
}

#endif
