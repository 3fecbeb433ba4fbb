# cython: language_level=3
# Declarations of _reader.h and the entry point every generated reader shares: hand-written, not generated.
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_ND, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.exc cimport PyErr_Clear
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New
from libc.stdint cimport int16_t, int32_t, int64_t
from libc.string cimport strcmp


cdef extern from "_reader.h":
    ctypedef struct ml_reader:
        const unsigned char *p
        Py_ssize_t pos
        Py_ssize_t end
    void ml_start(ml_reader *r, const unsigned char *p, Py_ssize_t pos, Py_ssize_t end)
    void ml_start_into(ml_reader *r, PyObject *into, const unsigned char *p, Py_ssize_t pos, Py_ssize_t end)
    void ml_finish(ml_reader *r, int ok)
    const char *METALOG_CYTHON_VERSION
    Py_ssize_t ML_SLOT(Py_ssize_t k)
    int ml_direct
    int16_t ml_i16(const unsigned char *p)
    int32_t ml_i32(const unsigned char *p)
    int64_t ml_uvarint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos)
    PyObject *ml_obj_bool(const unsigned char *p)
    PyObject *ml_obj_i8(const unsigned char *p)
    PyObject *ml_obj_i16(const unsigned char *p)
    PyObject *ml_obj_u16(const unsigned char *p)
    PyObject *ml_obj_i32(const unsigned char *p)
    PyObject *ml_obj_u32(const unsigned char *p)
    PyObject *ml_obj_i64(const unsigned char *p)
    PyObject *ml_obj_f64(const unsigned char *p)
    PyObject *ml_obj_uuid(const unsigned char *p)
    PyObject *ml_obj_str(const unsigned char *p, Py_ssize_t n)
    PyObject *ml_obj_bytes(const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_bool(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_i8(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_i16(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_u16(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_i32(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_u32(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_i64(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_f64(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    PyObject *ml_list_uuid(ml_reader *r, const unsigned char *p, Py_ssize_t n)
    int ml_set_uuid_maker(object maker) except -1
    int ml_set_object_new(object f) except -1
    int ml_init_small() except -1
    object ml_new(ml_reader *r, object cls)
    object ml_list(ml_reader *r, Py_ssize_t n)
    int ml_put(object o, Py_ssize_t off, object name, object v) except -1
    int ml_put_new(object o, Py_ssize_t off, object name, PyObject *v) except -1
    void ml_set_item(object items, Py_ssize_t i, object v)
    int ml_set_item_new(object items, Py_ssize_t i, PyObject *v) except -1
    Py_ssize_t ml_member_offset(object descr)
    PyObject *ml_slot(object o, Py_ssize_t off)
    Py_ssize_t ml_refs(PyObject *o)
    void ml_set_slot(object o, Py_ssize_t off, object v)
    int ml_generic_alloc(object cls)


ctypedef ml_reader Rd

ctypedef object (*ReadFn)(Rd *r)


# A reader's C entry point, as a generated module's ENTRIES hold it: a capsule of this name around a ReadFn.
cdef extern from *:
    """
    #define ML_ENTRY_NAME "metalog.codec.reader_entry.v1"
    """
    const char *ML_ENTRY_NAME


cdef inline object entry(ReadFn fn):
    """``fn`` as a capsule (``ENTRIES``): what a compiled caller elsewhere takes back with ``entry_fn``."""
    return PyCapsule_New(<void *>fn, ML_ENTRY_NAME, NULL)


cdef inline ReadFn entry_fn(object capsule) except NULL:
    """The ReadFn inside an ``entry`` capsule (TypeError for anything else)."""
    if not PyCapsule_IsValid(capsule, ML_ENTRY_NAME):
        raise TypeError(f"not a compiled reader's entry point: {capsule!r}")
    return <ReadFn>PyCapsule_GetPointer(capsule, ML_ENTRY_NAME)


cdef inline object read_entry(ReadFn fn, const unsigned char *p, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *stop):
    """``fn`` over p[pos:end], without a Python call or a bytes object: the object read (its end in ``stop``), or
    None where ``fn`` refuses the input. The caller then runs the pure reader on the same bytes, as ``read_with``
    does, which reads it (``read_with``'s disagreement) or raises the pure path's own error."""
    cdef Rd r
    ml_start(&r, p, pos, end)
    return _read(fn, &r, stop)


cdef inline object read_entry_into(ReadFn fn, PyObject *into, const unsigned char *p, Py_ssize_t pos, Py_ssize_t end,
                                   Py_ssize_t *stop):
    """``read_entry`` for a caller that takes the values out of the message and keeps nothing else of it: ``into``
    (borrowed; NULL: none), an instance of the class ``fn`` reads that only the caller holds, is filled again in
    place of a new object, and arrays of fixed-width values are read as tuples rather than lists (``_reader.h``'s
    ``ml_start_into``). The object read, or None where ``fn`` refuses the input (``into`` is then left half
    filled: the caller reads its values only from an object returned)."""
    cdef Rd r
    ml_start_into(&r, into, p, pos, end)
    return _read(fn, &r, stop)


cdef inline object _read(ReadFn fn, Rd *r, Py_ssize_t *stop):
    """``fn`` over the reader ``r`` started by ``read_entry`` or ``read_entry_into``: the object read, or None where
    ``fn`` refuses the input; the reader finished either way and its end in ``stop``."""
    cdef object o = None
    cdef bint ok = False
    try:
        o = fn(r)
        ok = True
    except Exception:
        o = None
    finally:
        ml_finish(r, ok)
    stop[0] = r.pos
    return o


cdef inline object unknown_tag(object o, Py_ssize_t off, object name, int64_t tag, const unsigned char *p,
                               Py_ssize_t size):
    """A tag the struct does not know at this version: kept as (tag, raw bytes), in the order read."""
    cdef object known = getattr(o, name)
    if known is None:
        known = []
        ml_put(o, off, name, known)
    known.append((tag, p[:size]))
    return None


cdef inline bint layout_ok(tuple layout):
    """Whether every class's slots sit where the generator expects them (direct stores are then correct)."""
    import platform

    if platform.python_implementation() != "CPython":
        return False
    for cls, names in layout:
        if (cls.__basicsize__ != ML_SLOT(len(names)) or cls.__itemsize__ or cls.__dictoffset__
                or cls.__weakrefoffset__ or not ml_generic_alloc(cls)):
            return False
        for k, name in enumerate(names):
            if ml_member_offset(cls.__dict__.get(name)) != ML_SLOT(k):
                return False
    return True


cdef inline object read_with(ReadFn fn, object pure, object buf, object pos):
    """Run a compiled reader over ``buf`` from ``pos``: ``(obj, end)`` as the pure reader returns it.

    Any input the compiled reader refuses, and any buffer it does not read itself (not one-dimensional
    bytes), goes to the pure reader, so errors are the pure path's own, raised where it raises them."""
    cdef Rd r
    cdef Py_buffer view
    cdef object o = None
    cdef int state = 0  # 0: a buffer this reader does not read, 1: refused, 2: read
    if type(pos) is not int or pos < 0:
        return pure(buf, pos)
    if type(buf) is bytes:
        if pos > PyBytes_GET_SIZE(buf):
            return pure(buf, pos)
        ml_start(&r, <const unsigned char *>PyBytes_AS_STRING(buf), pos, PyBytes_GET_SIZE(buf))
        state = 1
        try:
            o = fn(&r)
            state = 2
        except Exception:
            pass
        finally:
            ml_finish(&r, state == 2)
    else:
        try:
            PyObject_GetBuffer(buf, &view, PyBUF_ND | PyBUF_FORMAT)
        except Exception:
            PyErr_Clear()
            return pure(buf, pos)
        try:
            if view.ndim == 1 and (view.format == NULL or strcmp(view.format, b"B") == 0) and pos <= view.len:
                ml_start(&r, <const unsigned char *>view.buf, pos, view.len)
                state = 1
                try:
                    o = fn(&r)
                    state = 2
                finally:
                    ml_finish(&r, state == 2)
        except Exception:
            pass
        finally:
            PyBuffer_Release(&view)
    if state == 2:
        return o, r.pos
    if state == 1:
        return refused(pure, buf, pos)
    return pure(buf, pos)


cdef inline object refused(object pure, object buf, object pos):
    """The pure reader on input the compiled one refused: it raises the pure path's own error."""
    result = pure(buf, pos)
    from metalog.codec.compiled import disagreement

    disagreement(pure, buf, pos)  # the compiled reader refused what the pure one read: a bug, said out loud
    return result


cdef inline object ml_field(object o, Py_ssize_t off, object name):
    """``o``'s attribute ``name``: at its slot (``off``, from ``ml_member_offset``; 0: not a slot) where it is one
    and set, else ``getattr`` (a subclass that made it something else)."""
    cdef PyObject *v
    if off:
        v = ml_slot(o, off)
        if v is not NULL:
            return <object>v
    return getattr(o, name)
