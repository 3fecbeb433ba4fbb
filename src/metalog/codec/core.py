"""Which codec core runs, and the one place that looks up the compiled readers.

metalog's readers come in two builds of the same definitions: the pure Python modules in
``codec/messages/`` (the reference, always there) and the compiled modules in ``codec/compiled/``
(Cython, built at install where a C compiler is present). When the compiled modules load, each
generated class's ``READERS`` holds the compiled readers (same ``(buf, pos) -> (obj, pos)`` interface),
so ``ApiMessage.decode``, the framing and the replay's dispatch table use them without knowing;
``pure_readers(cls)`` keeps the pure ones. Writers are pure either way.

``METALOG_PURE=1`` in the environment at import forces the pure readers. ``status()`` says which
core runs and why (``metalog --version`` and ``metalog bench`` print it).

The same switch chooses the other compiled twins: hand-written Cython twins of hot paths, which each layer
registers here from its own package (``register_twin``: the log's record decoder, batch loop and scan, the
state's replay loop: the "log" core; the analysis' per-batch step). A caller runs ``twin.compiled`` where it is
not None and the pure twin otherwise; ``twin_status()`` says which runs and why (``metalog.bench.cores.log_status``
for the log core, whose layers it imports), ``pure_twins()`` switches a core's twins off for a while.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metalog.codec.runtime import KafkaStruct, Reader

PURE_ENV = "METALOG_PURE"
_PURE_PACKAGE = "metalog.codec.messages"
_COMPILED_PACKAGE = "metalog.codec.compiled"

# class -> its pure readers, for classes given compiled ones
_pure_readers: dict[type[KafkaStruct], dict[int, Reader]] = {}
_compiled: dict[str, ModuleType] = {}  # message module name -> its loaded compiled module
_missing: dict[str, str] = {}  # message module name -> why its compiled module did not load
# class -> version -> (its compiled reader, that reader's C entry point: a capsule, ``_reader.pxd``'s ``entry``)
_entries: dict[type[KafkaStruct], dict[int, tuple[Reader, object]]] = {}


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
    entries = getattr(compiled, "ENTRIES", {})
    for name, readers in compiled.READERS.items():
        cls = getattr(pure, name)
        _pure_readers[cls] = dict(cls.READERS)
        cls.READERS = dict(readers)
        _entries[cls] = {v: (readers[v], entry) for v, entry in entries.get(name, {}).items()}
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


def compiled_entry(cls: type[KafkaStruct], version: int, reader: Reader) -> object | None:
    """The C entry point of ``reader`` when it is ``cls``'s compiled reader of ``version`` (a capsule a compiled
    caller runs without a Python call: ``compiled/_reader.pxd``'s ``entry_fn`` and ``read_entry``), else None."""
    found = _entries.get(cls, {}).get(version)
    return found[1] if found is not None and found[0] is reader else None


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


# ---- the compiled twins ---------------------------------------------------------------------------------
# Each layer registers its own twins (``register_twin``) when it is imported: the log's record decoder, batch loop
# and scan, the state's replay loop (the "log" core), the analysis' per-batch step (the "analysis" core). No layer
# names another's modules; the status lines, bench's pure-vs-compiled switch and the tests go through this registry.


class Twin:
    """A compiled twin and the pure function it stands in for. ``compiled`` is what its caller runs, or None: the
    pure twin runs (``METALOG_PURE``, the module not built or refused by its layer's ``check``, or ``pure_twins``
    switched it off for a while). ``module``, ``attribute``: where the compiled one lives."""

    __slots__ = ("core", "module", "attribute", "pure", "compiled", "loaded", "why_not")

    def __init__(self, core: str, module: str, attribute: str, pure: Callable[..., object]) -> None:
        self.core, self.module, self.attribute, self.pure = core, module, attribute, pure
        self.loaded: ModuleType | None = None  # the compiled module, where it loaded and its layer accepted it
        self.why_not: str | None = None  # why it did not (None: it did), as the status line says it
        self.compiled: Any = None

    @property
    def name(self) -> str:
        """The compiled module's own name, as the status lines name a twin not built (``scan``)."""
        return self.module.rsplit(".", 1)[-1]

    def __repr__(self) -> str:
        return f"Twin({self.module}.{self.attribute}, {'compiled' if self.compiled is not None else 'pure'})"


_registry: dict[tuple[str, str], Twin] = {}  # (compiled module, attribute) -> its twin


def register_twin(core: str, module: str, attribute: str, pure: Callable[..., object],
                  check: Callable[[ModuleType], str | None] | None = None) -> Twin:
    """The twin of ``pure`` in the compiled ``module`` (its ``attribute``), loaded once: registering it again gives
    the same Twin. ``check(module)`` says why a built module is not to run (a stale build whose constants disagree
    with its layer's), or None."""
    key = (module, attribute)
    found = _registry.get(key)
    if found is not None:
        return found
    twin = _registry[key] = Twin(core, module, attribute, pure)
    if pure_requested():
        twin.why_not = f"{PURE_ENV}={os.environ[PURE_ENV]}"
        return twin
    try:
        loaded = importlib.import_module(module)
    except ImportError as e:
        twin.why_not = f"extension not built: {e}"
        return twin
    twin.why_not = None if check is None else check(loaded)
    if twin.why_not is None:
        twin.loaded, twin.compiled = loaded, getattr(loaded, attribute)
    return twin


def registered(core: str) -> list[Twin]:
    """The twins of ``core`` ("log", "analysis") registered so far, in the order their layers registered them."""
    return [t for t in _registry.values() if t.core == core]


@contextmanager
def pure_twins(core: str) -> Iterator[None]:
    """The pure twins of ``core`` run in this process for the duration (the compiled codec readers stay): what the
    benchmarks and the differential tests time and compare beside the compiled ones, in one run."""
    twins = registered(core)
    saved = [t.compiled for t in twins]
    for t in twins:
        t.compiled = None
    try:
        yield
    finally:
        for t, compiled in zip(twins, saved, strict=True):
            t.compiled = compiled


def pure_requested() -> bool:
    """``METALOG_PURE`` is set: every pure twin runs."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def twins_active(core: str) -> bool:
    """Whether every registered compiled twin of ``core`` runs (built, loaded, not METALOG_PURE)."""
    twins = registered(core)
    return bool(twins) and all(t.loaded is not None for t in twins)


def twin_status(core: str) -> str:
    """One line: which twins of ``core`` run, e.g. ``compiled (Cython 3.0.11)``, ``pure Python (METALOG_PURE=1)``
    or ``compiled (Cython 3.0.11); pure for scan (not built)``. Only the twins registered so far are counted: ask
    after importing the layers that register them."""
    twins = registered(core)
    loaded = [t.loaded for t in twins if t.loaded is not None]
    if not loaded:
        return f"pure Python ({twins[0].why_not if twins else 'no compiled twin registered'})"
    text = f"compiled (Cython {loaded[0].CYTHON_VERSION})"
    missing = sorted({t.name for t in twins if t.loaded is None})
    if missing:
        text += f"; pure for {', '.join(missing)} (not built)"
    return text

