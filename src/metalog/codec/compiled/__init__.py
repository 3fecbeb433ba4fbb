"""metalog's compiled readers: Cython modules generated from the definitions (see
``codegen/compiled.py`` in the repository), built at install where a C compiler is present.

``metalog.codec.core`` decides whether they run; this package holds what they share at run time.
"""

from __future__ import annotations

import warnings
from typing import Any

from metalog.codec.runtime import seen_uuid, uuid_of
from metalog.codec.uuid import Uuid


class CompiledReaderWarning(RuntimeWarning):
    """A compiled reader refused input its pure reader read: a bug in metalog (the pure result is used)."""


def shared_uuid(raw: bytes) -> Uuid:
    """The Uuid of 16 raw bytes, shared with the pure readers' table."""
    return seen_uuid(raw) or uuid_of(raw)


def disagreement(pure: Any, buf: Any, pos: int) -> None:
    """Say out loud that a compiled reader refused what the pure reader read (it carries on with the pure result)."""
    data = bytes(buf)
    warnings.warn(CompiledReaderWarning(
        f"metalog: the compiled {pure.__name__.lstrip('_')} refused input the pure reader read (from byte {pos} of "
        f"{len(data)}: {data[pos:pos + 64].hex()}...); please report it; METALOG_PURE=1 avoids the compiled core"),
        stacklevel=3)
