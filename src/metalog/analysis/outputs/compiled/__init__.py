"""The analysis outputs' compiled twin of the growth pass' counting (``growth_count``:
``metalog.analysis.outputs.growth_count.GrowthCount``), hand-written Cython built at install where a C compiler is
present (setup.py), chosen by ``metalog.analysis.outputs.growth`` (``METALOG_PURE=1`` runs the pure twin)."""
