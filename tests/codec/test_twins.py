"""The registry of compiled twins (``metalog.codec.core.register_twin``): each layer registers its own, with the pure
function it stands in for; a twin is loaded once; a build its layer refuses runs the pure twin and is named by the
status line; ``pure_twins`` switches a core's twins off and back on, whatever happens meanwhile."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from metalog.codec import core

CORE = "test-twins"  # a core of this test's own: the real ones are left as they are


def _pure(x: int) -> int:
    return x + 1


@pytest.fixture
def fake_modules() -> Iterator[dict[str, ModuleType]]:
    """Two importable fake compiled modules (built with Cython 9.9), removed after the test, with their twins."""
    made = {}
    for name in ("fast", "other"):
        module = ModuleType(f"tests.codec._twin_{name}")
        module.CYTHON_VERSION = "9.9"  # type: ignore[attr-defined]
        module.twice = lambda x: 2 * x  # type: ignore[attr-defined]
        sys.modules[module.__name__] = made[name] = module
    try:
        yield made
    finally:
        for module in made.values():
            del sys.modules[module.__name__]
        for key in [k for k, t in core._registry.items() if t.core == CORE]:
            del core._registry[key]


@pytest.mark.skipif(core.pure_requested(), reason="METALOG_PURE: no twin loads")
def test_a_twin_is_registered_once_and_switched_through_the_registry(fake_modules: dict[str, ModuleType]) -> None:
    twin = core.register_twin(CORE, "tests.codec._twin_fast", "twice", _pure)
    assert core.register_twin(CORE, "tests.codec._twin_fast", "twice", _pure) is twin  # loaded once
    assert twin.compiled is fake_modules["fast"].twice and twin.pure is _pure and twin.name == "_twin_fast"
    assert core.registered(CORE) == [twin] and core.twins_active(CORE)
    assert core.twin_status(CORE) == "compiled (Cython 9.9)"
    with pytest.raises(RuntimeError), core.pure_twins(CORE):
        assert twin.compiled is None and core.twin_status(CORE) == "compiled (Cython 9.9)"
        raise RuntimeError("the switch is undone all the same")
    assert twin.compiled is fake_modules["fast"].twice


@pytest.mark.skipif(core.pure_requested(), reason="METALOG_PURE: no twin loads")
def test_a_twin_not_built_or_refused_runs_pure_and_the_status_names_it(fake_modules: dict[str, ModuleType]) -> None:
    fast = core.register_twin(CORE, "tests.codec._twin_fast", "twice", _pure)
    missing = core.register_twin(CORE, "tests.codec._twin_missing", "twice", _pure)
    refused = core.register_twin(CORE, "tests.codec._twin_other", "twice", _pure,
                                 check=lambda m: f"{m.__name__} is stale")
    assert fast.compiled is not None and missing.compiled is None and refused.compiled is None
    assert missing.why_not is not None and missing.why_not.startswith("extension not built: No module named")
    assert refused.why_not == "tests.codec._twin_other is stale" and refused.loaded is None
    assert not core.twins_active(CORE)
    assert core.twin_status(CORE) == "compiled (Cython 9.9); pure for _twin_missing, _twin_other (not built)"
    del core._registry[("tests.codec._twin_fast", "twice")]
    assert core.twin_status(CORE).startswith("pure Python (extension not built: No module named")


def test_a_core_with_no_twin_registered_says_so() -> None:
    assert core.twin_status("nothing-registered") == "pure Python (no compiled twin registered)"
    assert not core.twins_active("nothing-registered")


def test_metalog_pure_registers_every_twin_pure(fake_modules: dict[str, ModuleType],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(core.PURE_ENV, "1")
    twin = core.register_twin(CORE, "tests.codec._twin_fast", "twice", _pure)
    assert twin.compiled is None and twin.loaded is None
    assert core.twin_status(CORE) == "pure Python (METALOG_PURE=1)"


def test_every_layer_registers_its_own_twins_and_none_names_another() -> None:
    """The log core's twins are the log's (its scan's tee too) and the state's, each registered from its own package;
    the analysis' step, loop, the growth count, the .om sample lines and the report's series are the analysis'.
    (codec/core.py names no module of a layer above it.)"""
    import metalog.analysis.domain.twins
    import metalog.analysis.outputs.growth
    import metalog.analysis.outputs.openmetrics
    import metalog.analysis.outputs.report.series
    import metalog.bench.cores  # noqa: F401  (the log and state layers, registered)

    owners = {(t.core, t.module.rsplit(".compiled.", 1)[0], t.pure.__module__) for t in core._registry.values()
              if t.module.startswith("metalog.")}
    assert owners == {("log", "metalog.log", "metalog.log.batch"), ("log", "metalog.log", "metalog.log.reader"),
                      ("log", "metalog.log", "metalog.log.scan"), ("log", "metalog.log", "metalog.log.tee"),
                      ("log", "metalog.state", "metalog.state.loader"),
                      ("analysis", "metalog.analysis.domain", "metalog.analysis.domain.step"),
                      ("analysis", "metalog.analysis.domain", "metalog.analysis.domain.loop"),
                      ("analysis", "metalog.analysis.outputs", "metalog.analysis.outputs.growth_count"),
                      ("analysis", "metalog.analysis.outputs", "metalog.analysis.outputs.openmetrics"),
                      ("analysis", "metalog.analysis.outputs", "metalog.analysis.outputs.sampling"),
                      ("analysis", "metalog.analysis.outputs", "metalog.analysis.outputs.report.series"),
                      ("analysis", "metalog.analysis.outputs", "metalog.analysis.outputs.report.reading")}
    with open(core.__file__) as f:
        source = f.read()
    assert not [m for m in ("metalog.log.compiled", "metalog.state.compiled", "metalog.analysis") if m in source]
