# cython: language_level=3
"""Facts of the build of the compiled readers (hand-written: the one compiled module not generated)."""

cdef extern from "_reader.h":
    const char *METALOG_CYTHON_VERSION

CYTHON_VERSION = METALOG_CYTHON_VERSION.decode()
