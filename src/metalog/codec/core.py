"""Which codec core runs, and the one place that looks up the compiled readers.

metalog's readers come in two builds of the same definitions: the pure Python modules in
``codec/messages/`` (the reference, always there) and the compiled modules in ``codec/compiled/``
(Cython, built at install where a C compiler is present). When the compiled modules load, each
generated class's ``READERS`` holds the compiled readers (same ``(buf, pos) -> (obj, pos)`` interface),
so ``ApiMessage.decode``, the framing and the replay's dispatch table use them without knowing;
``pure_readers(cls)`` keeps the pure ones. Writers are pure either way.

``METALOG_PURE=1`` in the environment at import forces the pure readers. ``status()`` says which
core runs and why (``metalog --version`` and ``metalog bench`` print it).

The same switch chooses the log core: the hand-written compiled twins of the log's hot paths (the record
decoder, the batch scan, the replay loop; ``LOG_TWINS``). A module that uses one asks ``twin(name)`` for it
and runs its pure twin where that gives None; ``log_status()`` says which runs and why.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metalog.codec.runtime import KafkaStruct, Reader

PURE_ENV = "METALOG_PURE"
_PURE_PACKAGE = "metalog.codec.messages"
_COMPILED_PACKAGE = "metalog.codec.compiled"

# class -> its pure readers, for classes given compiled ones
_pure_readers: dict[type[KafkaStruct], dict[int, Reader]] = {}
_compiled: dict[str, ModuleType] = {}  # message module name -> its loaded compiled module
_missing: dict[str, str] = {}  # message module name -> why its compiled module did not load


def _why_not_compiled() -> str | None:
    """None when the compiled readers are to run; else why not, as ``status()`` shows it."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return f"{PURE_ENV}={os.environ[PURE_ENV]}"
    try:
        info = importlib.import_module(f"{_COMPILED_PACKAGE}._info")
    except ImportError as e:
        return f"extension not built: {e}"
    global CYTHON_VERSION
    CYTHON_VERSION = info.CYTHON_VERSION
    return None


CYTHON_VERSION: str | None = None
WHY_PURE = _why_not_compiled()


def message_module(module: str) -> ModuleType:
    """The generated module of a message (``codec/messages/<module>.py``), its classes' READERS the
    compiled readers when they load. ``metalog.codec.message_class`` comes here: the one way in."""
    pure = importlib.import_module(f"{_PURE_PACKAGE}.{module}")
    if WHY_PURE is None and module not in _compiled and module not in _missing:
        _install(module, pure)
    return pure


def _install(module: str, pure: ModuleType) -> None:
    try:
        compiled = importlib.import_module(f"{_COMPILED_PACKAGE}.{module}")
    except ImportError as e:  # a module that did not compile: this message stays pure, and status() says so
        _missing[module] = str(e)
        return
    for name, readers in compiled.READERS.items():
        cls = getattr(pure, name)
        _pure_readers[cls] = dict(cls.READERS)
        cls.READERS = dict(readers)
    _compiled[module] = compiled


def compiled_active() -> bool:
    """Whether the compiled readers run (for every message whose module loaded)."""
    return WHY_PURE is None


def is_compiled(cls: type[KafkaStruct]) -> bool:
    """Whether ``cls`` (a generated message or struct class) reads with its compiled readers."""
    return cls in _pure_readers


def pure_readers(cls: type[KafkaStruct]) -> dict[int, Reader]:
    """The pure Python readers of a generated class, whichever core runs."""
    return _pure_readers.get(cls, cls.READERS)


def compiled_readers(cls: type[KafkaStruct]) -> dict[int, Reader] | None:
    """The compiled readers of a generated class, or None where they do not run."""
    return cls.READERS if cls in _pure_readers else None


def load_all() -> dict[str, str]:
    """Load every message's compiled readers (where they run); message module -> why one did not load."""
    from metalog.codec.messages import MODULES

    for module in MODULES.values():
        message_module(module)
    return dict(_missing)


def direct_stores(flag: bool | None = None) -> bool:
    """Whether the loaded compiled readers store straight into slots (CPython, the expected slot layout);
    ``flag`` False switches them to the portable path (object.__new__ and setattr), True back where allowed."""
    states = [m.direct_stores(flag) for m in _compiled.values()]
    return bool(states) and all(states)


def status() -> str:
    """One line: which codec core runs, e.g. ``compiled (Cython 3.0.11)`` or ``pure Python (METALOG_PURE=1)``."""
    if WHY_PURE is not None:
        return f"pure Python ({WHY_PURE})"
    missing = load_all()
    text = f"compiled (Cython {CYTHON_VERSION})"
    if not direct_stores():
        text += ", portable slot stores"
    if missing:
        text += f"; pure for {len(missing)} message module(s) not built: {', '.join(sorted(missing))}"
    return text


# ---- the log core --------------------------------------------------------------------------------------
# the compiled twins of the log's hot paths, in their layers
LOG_TWINS = ("metalog.log.compiled.records", "metalog.log.compiled.reader", "metalog.log.compiled.scan",
             "metalog.state.compiled.loader")
_twins: dict[str, ModuleType] = {}  # twin module -> the loaded module
_twins_missing: dict[str, str] = {}  # twin module -> why it did not load


def twin(module: str) -> ModuleType | None:
    """The compiled twin module ``module`` (one of ``LOG_TWINS``, or a layer's own above the log, registered there:
    the analysis' step), or None where its pure twin is to run: ``METALOG_PURE=1``, or the module was not built
    (``log_status()``, ``twin_missing`` say so)."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    if module not in _twins and module not in _twins_missing:
        try:
            _twins[module] = importlib.import_module(module)
        except ImportError as e:
            _twins_missing[module] = str(e)
    return _twins.get(module)


def pure_requested() -> bool:
    """``METALOG_PURE`` is set: every pure twin runs."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def twin_missing(module: str) -> str | None:
    """Why the compiled twin ``module`` did not load (None: it did, or was not asked for)."""
    return _twins_missing.get(module)


def log_compiled_active() -> bool:
    """Whether every compiled twin of the log core runs."""
    return all(twin(m) is not None for m in LOG_TWINS)


def log_status() -> str:
    """One line: which log core runs, e.g. ``compiled (Cython 3.0.11)`` or ``pure Python (METALOG_PURE=1)``."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return f"pure Python ({PURE_ENV}={os.environ[PURE_ENV]})"
    loaded = [m for m in map(twin, LOG_TWINS) if m is not None]
    if not loaded:
        return f"pure Python (extension not built: {_twins_missing[LOG_TWINS[0]]})"
    text = f"compiled (Cython {loaded[0].CYTHON_VERSION})"
    missing = sorted(m.rsplit(".", 1)[-1] for m in LOG_TWINS if m in _twins_missing)
    if missing:
        text += f"; pure for {', '.join(missing)} (not built)"
    return text
