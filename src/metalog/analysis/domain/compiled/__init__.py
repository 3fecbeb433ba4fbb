"""The analysis' compiled twin of its per-batch step (``step``: ``metalog.analysis.domain.step.ClusterStep``),
hand-written Cython built at install where a C compiler is present (setup.py), chosen by
``metalog.analysis.domain.twins`` (``METALOG_PURE=1`` runs the pure twin)."""
