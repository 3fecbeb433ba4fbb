"""Which twins of the per-batch step and loop run: the compiled ones (``domain.compiled.step``,
``domain.compiled.loop``) where they were built and ``METALOG_PURE`` is not set, else the pure ones (``domain.step``,
``domain.loop``). Registered here, by the layer that owns them, in ``metalog.codec.core``'s registry of twins (the
"analysis" core)."""

from __future__ import annotations

from metalog.analysis.domain import loop, step
from metalog.codec import core

STEP = core.register_twin("analysis", "metalog.analysis.domain.compiled.step", "ClusterStep", step.ClusterStep)
LOOP = core.register_twin("analysis", "metalog.analysis.domain.compiled.loop", "BatchLoop", loop.BatchLoop)


def cluster_step() -> type[step.ClusterStep]:
    """The ClusterStep class that runs."""
    found: type[step.ClusterStep] = step.ClusterStep if STEP.compiled is None else STEP.compiled
    return found


def batch_loop() -> type[loop.BatchLoop]:
    """The BatchLoop class that runs."""
    found: type[loop.BatchLoop] = loop.BatchLoop if LOOP.compiled is None else LOOP.compiled
    return found


def status() -> str:
    """One line: ``compiled (Cython 3.3.1)``, or ``pure Python`` and why."""
    return core.twin_status("analysis")
