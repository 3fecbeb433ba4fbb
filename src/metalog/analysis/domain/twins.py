"""Which twin of the per-batch step runs: the compiled one (``domain.compiled.step``) where it was built and
``METALOG_PURE`` is not set, else the pure one (``domain.step``). Registered here, by the layer that owns it, in
``metalog.codec.core``'s registry of twins (the "analysis" core)."""

from __future__ import annotations

from metalog.analysis.domain import step
from metalog.codec import core

STEP = core.register_twin("analysis", "metalog.analysis.domain.compiled.step", "ClusterStep", step.ClusterStep)


def cluster_step() -> type[step.ClusterStep]:
    """The ClusterStep class that runs."""
    found: type[step.ClusterStep] = step.ClusterStep if STEP.compiled is None else STEP.compiled
    return found


def status() -> str:
    """One line: ``compiled (Cython 3.3.1)``, or ``pure Python`` and why."""
    return core.twin_status("analysis")
