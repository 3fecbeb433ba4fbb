"""Which twin of the per-batch step runs: the compiled one (``domain.compiled.step``) where it was built and
``METALOG_PURE`` is not set, else the pure one (``domain.step``). Registered here, by the layer that owns it;
``metalog.codec.core.twin`` loads it as it loads the log core's."""

from __future__ import annotations

from metalog.analysis.domain import step
from metalog.codec import core

ANALYSIS_TWINS = ("metalog.analysis.domain.compiled.step",)


def cluster_step() -> type[step.ClusterStep]:
    """The ClusterStep class that runs."""
    compiled = core.twin(ANALYSIS_TWINS[0])
    found: type[step.ClusterStep] = step.ClusterStep if compiled is None else compiled.ClusterStep
    return found


def status() -> str:
    """One line: ``compiled (Cython 3.3.1)``, or ``pure Python`` and why."""
    compiled = core.twin(ANALYSIS_TWINS[0])
    if compiled is not None:
        return f"compiled (Cython {compiled.CYTHON_VERSION})"
    if core.pure_requested():
        return f"pure Python ({core.PURE_ENV}=1)"
    return f"pure Python (not built: {core.twin_missing(ANALYSIS_TWINS[0])})"
